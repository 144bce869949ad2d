"""The strategy protocol: plain Python over OpenAI-style message dicts.

A strategy sees the session one message at a time (``add``) and, whenever the
agent is about to call the model, returns the window it would send
(``window``).  The last message added is the current one (the user's question
or a tool result); a strategy never alters it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..messages import Message, content_text
from ..recorded_windows import RecordedWindow

__all__ = [
    "BaseStrategy",
    "ContextStrategy",
    "Message",
    "StrategyContext",
    "ToolHandler",
    "Window",
    "approximate_tokens",
    "content_text",
    "copy_message",
    "current_exchange_start",
    "fork_strategy",
    "is_plain_message",
    "messages_tokens",
    "split_system",
    "tool_call_ids",
]

ToolHandler = Callable[[str, dict[str, Any]], str]


@dataclass
class Window:
    """What a strategy sends on one model call."""

    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    # Answers the calls the model makes to ``tools``; None when no tools.
    tool_handler: ToolHandler | None = None
    # Original texts that are not in ``messages`` but can be retrieved by a
    # tool; fact survival reports a fact found only here as ``in_store``.
    retrievable: list[str] = field(default_factory=list)


@dataclass
class StrategyContext:
    """What the harness gives a strategy: a model to call and a token counter."""

    count_tokens: Callable[[str], int]
    # Calls the session's model: (messages) -> assistant text.  Counted by the
    # harness as strategy calls.  None when the strategy may not call a model.
    complete: Callable[[list[Message]], str] | None = None
    # Structured output: (messages, JSON schema) -> the object the model filled
    # in.  Goes through the same counted client, with ``response_format`` set
    # to that schema.  None when the strategy may not call a model.
    complete_json: Callable[[list[Message], dict[str, Any]], dict[str, Any]] | None = None
    # The windows production sent, by message number, for a scenario imported
    # from traces (the ``recorded`` strategy replays them); None otherwise.
    recorded: Mapping[int, RecordedWindow] | None = None


@runtime_checkable
class ContextStrategy(Protocol):
    """Anything with these methods can be evaluated."""

    name: str

    def add(self, message: Message) -> None: ...

    def window(self) -> Window: ...


class BaseStrategy:
    """Convenience base: keeps the raw history and knows how to fork itself."""

    name = "base"
    description = ""

    def __init__(self) -> None:
        self.history: list[Message] = []
        self.ctx: StrategyContext | None = None

    def setup(self, ctx: StrategyContext) -> None:
        self.ctx = ctx

    def add(self, message: Message) -> None:
        self.history.append(message)

    def revise(self, index: int, message: Message) -> None:
        """Replace message ``index`` of the current chat's history by a rewritten
        version: in a pipeline, an earlier stage condensed it (see ``pipeline``).

        Strategies that cache per-message work override this to drop the cache."""
        self.history[index] = message

    def end_session(self) -> None:
        """Called when a chat ends and a new one begins (multi-session).

        By default a new chat starts empty but for the system prompt, as in
        chat apps; strategies with long-term memory override this."""
        self.history = [m for m in self.history if m.get("role") == "system"]

    def window(self) -> Window:  # pragma: no cover - abstract
        raise NotImplementedError

    def fork(self) -> BaseStrategy:
        """An independent copy: each probe continues from the same state."""
        history = getattr(self, "history", None)
        memo = _plain_copies(history if isinstance(history, list) else [])
        memo.update(self._copies_for_fork())
        return copy.deepcopy(self, memo)

    def _copies_for_fork(self) -> dict[int, Any]:
        """Copies ``fork`` takes as they are, by the id of what they copy: a
        list of immutable items needs only a new list, and deepcopy would
        visit every item (a fork is made per probe)."""
        return {}

    def params(self) -> dict[str, Any]:
        """The parameters this instance runs with, for reports and listings."""
        return {}

    def count_tokens(self, text: str) -> int:
        """Tokens as the harness counts them; a chars/4 estimate before ``setup``."""
        if self.ctx is not None:
            return self.ctx.count_tokens(text)
        return approximate_tokens(text)


# The harness's chat overheads (see llm/tokens.py): per request and per message.
REQUEST_OVERHEAD_TOKENS = 3
MESSAGE_OVERHEAD_TOKENS = 4


def approximate_tokens(text: str) -> int:
    """About four characters a token: enough for budgets before a tokenizer is known."""
    return (len(text) + 3) // 4


def messages_tokens(messages: list[Message], count_tokens: Callable[[str], int]) -> int:
    """The tokens of a window's messages, the way the harness counts them (tools excluded).

    This is what a ``budget_tokens`` parameter bounds."""
    total = REQUEST_OVERHEAD_TOKENS
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS + count_tokens(content_text(message))
        if message.get("tool_calls"):
            total += count_tokens(json.dumps(message["tool_calls"], sort_keys=True))
    return total


# Values a deep copy shares rather than copies.
_IMMUTABLE = (str, int, float, bool, type(None))


def is_plain_message(message: Any) -> bool:
    """Whether ``message`` is a dict of immutable values only (plain text
    messages, the bulk of any session): its deep copy is a ``dict`` copy."""
    return type(message) is dict and all(type(v) in _IMMUTABLE for v in message.values())


def copy_message(message: Message) -> Message:
    """A deep copy of ``message``: plain text messages (the bulk of any
    session) without ``copy.deepcopy``'s per-value bookkeeping."""
    return dict(message) if is_plain_message(message) else copy.deepcopy(message)


def _plain_copies(messages: Iterable[Any]) -> dict[int, Any]:
    """A ``copy.deepcopy`` memo holding a copy of each plain message: the
    deep copy it would make, made in one step.  A message listed twice still
    gets one copy, as deepcopy would give it."""
    return {id(m): dict(m) for m in messages if is_plain_message(m)}


def fork_strategy(strategy: ContextStrategy) -> ContextStrategy:
    fork = getattr(strategy, "fork", None)
    return fork() if callable(fork) else copy.deepcopy(strategy)


def split_system(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """Leading system messages, and the rest."""
    i = system_length(messages)
    return messages[:i], messages[i:]


def system_length(messages: list[Message]) -> int:
    """How many system messages lead ``messages``."""
    i = 0
    while i < len(messages) and messages[i].get("role") == "system":
        i += 1
    return i


def tool_call_ids(message: Message) -> list[str]:
    """The ids of the tool calls an assistant message makes."""
    return [str(call.get("id")) for call in message.get("tool_calls") or []]


def current_exchange_start(messages: list[Message]) -> int:
    """Index where the current exchange begins.

    Usually the current message itself; when it is a tool result, the
    assistant message that made the call (and any sibling results), since a
    tool result must never be sent without its call.
    """
    last = len(messages) - 1
    if last < 0 or messages[last].get("role") != "tool":
        return max(last, 0)
    i = last
    while i > 0 and messages[i - 1].get("role") == "tool":
        i -= 1
    caller = i - 1
    if caller >= 0 and messages[last].get("tool_call_id") in tool_call_ids(messages[caller]):
        return caller
    return last
