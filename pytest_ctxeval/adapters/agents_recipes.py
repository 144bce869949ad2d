"""The trimming and summarising sessions the OpenAI Agents SDK documents.

The SDK (0.24.0) ships no such class: its cookbook ("Context Engineering -
Short-Term Memory Management with Sessions") gives them as recipes, a
``TrimmingSession`` and a ``SummarizingSession`` subclassing the SDK's
``SessionABC``.  They are implemented here from that description, behaviour
for behaviour, including what the recipe does to items that are not chat
messages (see :class:`SummarizingSession`), so a team running the recipe sees
what it does:

- ``TrimmingSession(max_turns)``: a turn is a user message and every item up
  to the next one; after each write and on each read the history is cut to
  start at the earliest of the last ``max_turns`` user messages.
- ``SummarizingSession(keep_last_n_turns, context_limit)``: when the history
  holds more than ``context_limit`` real user turns, everything before the
  earliest of the last ``keep_last_n_turns`` is replaced by a synthetic pair,
  a user message "Summarize the conversation we had so far." and an
  assistant message holding the summary; the summary is the model's reply to
  a system prompt and the older items as ``ROLE: content`` lines.

The classes are built on first use (they subclass the SDK's ``SessionABC``),
so importing this module does not import the SDK.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

from . import require

KIND = "openai-agents-session"
SHADOW_PROMPT = "Summarize the conversation we had so far."
# The recipe's prompt is for a support desk; this one says the same for any session.
SUMMARY_PROMPT = (
    "Compress the earlier conversation into a precise, reusable snapshot for future turns. "
    "Keep every identifier, number, file name, decision, error string and user instruction "
    "exactly as written; do not invent facts. Reply with the snapshot only."
)
# Long tool outputs are cut to this many characters in the summary's input.
TOOL_TRIM_LIMIT = 600
# What the recipe sends to the model of an item; everything else is metadata.
ALLOWED_KEYS = ("role", "content", "name")

Summarize = Callable[[list[dict[str, Any]]], str]


def is_user(item: Any) -> bool:
    role = item.get("role") if isinstance(item, dict) else getattr(item, "role", None)
    return bool(role == "user")


def summary_request(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recipe's summariser request: the prompt, then the items as role lines."""
    lines = []
    for item in items:
        role = str(item.get("role") or "assistant").lower()
        content = item.get("content")
        text = content if isinstance(content, str) else "" if content is None else str(content)
        text = text.strip()
        if not text:
            continue
        if role in ("tool", "tool_result") and len(text) > TOOL_TRIM_LIMIT:
            text = text[:TOOL_TRIM_LIMIT] + " …"
        lines.append(f"{role.upper()}: {text}")
    # Starts with "Summarize": a model (and the mock) reads it as the request it is.
    request = "Summarize the earlier conversation below.\n\n" + "\n".join(lines)
    return [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": request}]


def as_chat_input(item: Any) -> Any:
    """A recipe item as chat input.  The recipe strips an assistant message
    item to ``role`` and ``content``, leaving its ``output_text`` parts: the
    Responses API takes that as input, the SDK's chat converter does not, so
    the parts' text is joined here (what the Responses API reads of them)."""
    content = item.get("content") if isinstance(item, dict) else None
    if (
        isinstance(content, list)
        and set(item) == {"role", "content"}
        and item["role"] == "assistant"
        and all(isinstance(p, dict) and p.get("type") == "output_text" for p in content)
    ):
        return {"role": "assistant", "content": "".join(p.get("text", "") for p in content)}
    return item


@cache
def session_classes() -> tuple[type[Any], type[Any]]:
    """``(TrimmingSession, SummarizingSession)``, subclasses of the SDK's ``SessionABC``."""
    base = require("agents.memory.session", KIND).SessionABC

    class TrimmingSession(base):  # type: ignore[misc, valid-type]
        def __init__(self, session_id: str, max_turns: int = 8) -> None:
            self.session_id = session_id
            self.max_turns = max(1, int(max_turns))
            self._items: list[Any] = []

        def _trimmed(self, items: list[Any]) -> list[Any]:
            count = 0
            for index in range(len(items) - 1, -1, -1):
                if is_user(items[index]):
                    count += 1
                    if count == self.max_turns:
                        return items[index:]
            return items

        async def get_items(self, limit: int | None = None) -> list[Any]:
            trimmed = self._trimmed(list(self._items))
            return trimmed[-limit:] if limit is not None and limit >= 0 else trimmed

        async def add_items(self, items: list[Any]) -> None:
            if items:
                self._items = self._trimmed([*self._items, *items])

        async def pop_item(self) -> Any:
            return self._items.pop() if self._items else None

        async def clear_session(self) -> None:
            self._items = []

        def close(self) -> None:
            """Nothing to release (the SQLite session has a connection)."""

        def copy(self) -> TrimmingSession:
            clone = TrimmingSession(self.session_id, self.max_turns)
            clone._items = copy.deepcopy(self._items)
            return clone

    class SummarizingSession(base):  # type: ignore[misc, valid-type]
        """The recipe's records are ``{"msg": ..., "meta": ...}``: only ``role``,
        ``content`` and ``name`` of an item reach the model, and an item
        without a role becomes a user message whose content is the item's
        text.  So a ``function_call`` or ``function_call_output`` item is
        sent as a user message: the recipe loses the tool calls' pairing (the
        window rules report it)."""

        def __init__(
            self,
            summarize: Summarize,
            keep_last_n_turns: int = 3,
            context_limit: int = 3,
            session_id: str = "default",
        ) -> None:
            if context_limit < 1 or keep_last_n_turns < 0 or keep_last_n_turns > context_limit:
                raise ValueError(
                    "need context_limit >= 1 and 0 <= keep_last_n_turns <= context_limit, got "
                    f"keep_last_n_turns={keep_last_n_turns}, context_limit={context_limit}"
                )
            self.summarize = summarize
            self.keep_last_n_turns = keep_last_n_turns
            self.context_limit = context_limit
            self.session_id = session_id
            self._records: list[dict[str, dict[str, Any]]] = []

        @staticmethod
        def _record(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
            msg = {k: v for k, v in item.items() if k in ALLOWED_KEYS}
            meta = {k: v for k, v in item.items() if k not in ALLOWED_KEYS}
            msg.setdefault("role", "user")
            msg.setdefault("content", str(item))
            if msg["role"] in ("user", "assistant"):
                meta.setdefault("synthetic", False)
            return {"msg": msg, "meta": meta}

        def _boundary(self) -> int | None:
            """Where the kept turns begin, when a summary is due."""
            starts = [
                i
                for i, r in enumerate(self._records)
                if r["msg"].get("role") == "user" and not r["meta"].get("synthetic")
            ]
            if len(starts) <= self.context_limit:
                return None
            if self.keep_last_n_turns == 0:
                return len(self._records)
            boundary = starts[-self.keep_last_n_turns]
            return boundary if boundary > 0 else None

        async def get_items(self, limit: int | None = None) -> list[Any]:
            msgs = [dict(r["msg"]) for r in self._records]
            return msgs[-limit:] if limit else msgs

        async def add_items(self, items: list[Any]) -> None:
            self._records.extend(self._record(dict(item)) for item in items)
            boundary = self._boundary()
            if boundary is None:
                return
            summary = self.summarize([dict(r["msg"]) for r in self._records[:boundary]])
            synthetic = {"synthetic": True}
            self._records = [
                {"msg": {"role": "user", "content": SHADOW_PROMPT}, "meta": dict(synthetic)},
                {"msg": {"role": "assistant", "content": summary}, "meta": dict(synthetic)},
                *self._records[boundary:],
            ]

        async def pop_item(self) -> Any:
            return dict(self._records.pop()["msg"]) if self._records else None

        async def clear_session(self) -> None:
            self._records = []

        def close(self) -> None:
            """Nothing to release."""

        def copy(self) -> SummarizingSession:
            clone = SummarizingSession(
                self.summarize, self.keep_last_n_turns, self.context_limit, self.session_id
            )
            clone._records = copy.deepcopy(self._records)
            return clone

    return TrimmingSession, SummarizingSession
