"""``langchain-trim``: LangChain's own ``trim_messages``, run unchanged.

Every window converts the session to LangChain messages, calls
``langchain_core.messages.trim_messages`` with this strategy's parameters
and converts the result back.  Messages the library kept unchanged come back
as the very dicts the session holds (byte for byte, so prompt caching and the
window rules see them as kept); a message ``allow_partial`` cut comes back
converted.

Tested against langchain-core 1.8.3 (the ``langchain`` extra asks for >= 1.0).

Parameters are LangChain's, with two choices of this harness:

- ``token_counter``: ``harness`` (default) counts a window the way every
  budget here is counted (the run's tokenizer plus per-message overheads), so
  ``max_tokens`` means what it means for ``truncate`` or ``headtail``;
  ``approximate`` is LangChain's ``count_tokens_approximately``.
- ``include_system`` defaults to True and ``start_on`` to ``human``
  (LangChain's defaults are False and None; its docs recommend these for chat
  models, and the window rules want the system prompt kept).  With
  ``include_system=False`` the system prompt may go, and the rules allow it.

The question being asked always reaches the model: when the library's output
does not end with the current exchange (``strategy="first"``, or one turn
over ``max_tokens``), the current exchange is appended to what it returned.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ..strategies.base import (
    BaseStrategy,
    Message,
    Window,
    current_exchange_start,
    messages_tokens,
)
from . import require

KIND = "langchain-trim"
_ROLES = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}


def to_langchain(messages: list[Message]) -> list[Any]:
    """OpenAI-style dicts as LangChain messages; each gets ``id`` ``ctx-<index>``."""
    lc = require("langchain_core.messages", KIND)
    out: list[Any] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        content = "" if content is None else content
        ident = f"ctx-{index}"
        if role == "system":
            out.append(lc.SystemMessage(content=content, id=ident))
        elif role == "user":
            out.append(lc.HumanMessage(content=content, id=ident))
        elif role == "assistant":
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": _args(call["function"].get("arguments")),
                    "id": call.get("id"),
                    "type": "tool_call",
                }
                for call in message.get("tool_calls") or []
            ]
            out.append(lc.AIMessage(content=content, tool_calls=calls, id=ident))
        elif role == "tool":
            extra = {"name": message["name"]} if message.get("name") else {}
            out.append(
                lc.ToolMessage(
                    content=content,
                    tool_call_id=str(message.get("tool_call_id")),
                    id=ident,
                    **extra,
                )
            )
        else:
            raise ValueError(f"{KIND}: a message with role {role!r} has no LangChain type")
    return out


def from_langchain(messages: list[Any]) -> list[Message]:
    """LangChain messages as OpenAI-style dicts."""
    out: list[Message] = []
    for message in messages:
        role = {v: k for k, v in _ROLES.items()}.get(message.type)
        if role is None:
            raise ValueError(f"{KIND}: LangChain message type {message.type!r} has no role")
        converted: Message = {"role": role, "content": message.content}
        if role == "assistant" and message.tool_calls:
            # OpenAI's form of a call-only message: no content, not "".
            converted["content"] = message.content or None
            converted["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for call in message.tool_calls
            ]
        if role == "tool":
            converted["tool_call_id"] = message.tool_call_id
            if message.name:
                converted["name"] = message.name
        out.append(converted)
    return out


def _args(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {"__raw__": arguments}
    return parsed if isinstance(parsed, dict) else {"__value__": parsed}


def back_to_session(history: list[Message], kept: list[Any]) -> list[Message]:
    """The library's output as the session's own dicts, where it kept them unchanged."""
    originals = to_langchain(history)
    out: list[Message] = []
    for message in kept:
        ident = str(message.id or "")
        index = int(ident[4:]) if ident.startswith("ctx-") and ident[4:].isdigit() else -1
        same = 0 <= index < len(history) and originals[index] == message
        out.append(history[index] if same else from_langchain([message])[0])
    return out


class LangChainTrimStrategy(BaseStrategy):
    name = KIND
    description = "LangChain's own trim_messages (langchain_core.messages), unchanged."

    def __init__(
        self,
        max_tokens: int = 4000,
        strategy: Literal["first", "last"] = "last",
        token_counter: Literal["harness", "approximate"] = "harness",
        include_system: bool = True,
        start_on: str | list[str] | None = "human",
        end_on: str | list[str] | None = None,
        allow_partial: bool = False,
    ) -> None:
        super().__init__()
        require("langchain_core.messages", KIND)  # a missing library fails here, once
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.strategy = strategy
        self.token_counter = token_counter
        self.include_system = include_system
        self.start_on = start_on
        self.end_on = end_on
        self.allow_partial = allow_partial

    def params(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "strategy": self.strategy,
            "token_counter": self.token_counter,
            "include_system": self.include_system,
            "start_on": self.start_on,
            "end_on": self.end_on,
            "allow_partial": self.allow_partial,
        }

    def trim_kwargs(self) -> dict[str, Any]:
        """The keyword arguments ``trim_messages`` is called with."""
        kwargs: dict[str, Any] = {
            "max_tokens": self.max_tokens,
            "strategy": self.strategy,
            "token_counter": self._counter(),
            "allow_partial": self.allow_partial,
            "end_on": self.end_on,
        }
        if self.strategy == "last":  # LangChain rejects these for "first"
            kwargs["include_system"] = self.include_system
            kwargs["start_on"] = self.start_on
        return kwargs

    def _counter(self) -> Any:
        if self.token_counter == "approximate":
            return require("langchain_core.messages.utils", KIND).count_tokens_approximately
        return lambda ms: messages_tokens(from_langchain(ms), self.count_tokens)

    def window(self) -> Window:
        lc = require("langchain_core.messages", KIND)
        kept = lc.trim_messages(to_langchain(self.history), **self.trim_kwargs())
        window = back_to_session(self.history, kept)
        current = self.history[current_exchange_start(self.history) :]
        if window[-len(current) :] != current:
            window = [m for m in window if m not in current] + current
        return Window(messages=window)
