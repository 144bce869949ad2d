"""``truncate``: keep the first ``max_chars`` characters (or ``max_tokens``
tokens with ``unit="tokens"``), drop the rest; with ``unit="items"``, cut
every earlier message to its first ``max_chars`` characters instead.

LangChain ``trim_messages(strategy="first")`` with a character or token
counter.  The naive baseline: it keeps the start of the session, so follow-ups
about recent answers lose their referent.
"""

from __future__ import annotations

from typing import Any

from .base import BaseStrategy, Message, Window, content_text, current_exchange_start
from .registration import register_strategy

UNITS = ("chars", "tokens", "items")
ITEM_CUT = " [… cut]"


@register_strategy("truncate")
class TruncateStrategy(BaseStrategy):
    name = "truncate"
    description = "Keep the first max_chars characters (or max_tokens tokens) and drop the rest."

    def __init__(self, max_chars: int = 6000, unit: str = "chars", max_tokens: int = 2000) -> None:
        super().__init__()
        if unit not in UNITS:
            raise ValueError(f"truncate: unit must be one of {', '.join(UNITS)}, got {unit!r}")
        for param, value in (("max_chars", max_chars), ("max_tokens", max_tokens)):
            if value < 0:
                raise ValueError(f"truncate: {param} must be >= 0, got {value!r}")
        self.max_chars = max_chars
        self.unit = unit
        self.max_tokens = max_tokens
        # What the window keeps of history[:upto], worked out once: the
        # history only grows, so each window scans its new messages only (a
        # long session must not cost turns x messages).  Dropped when the
        # history is rewritten.
        self._kept: list[Message] = []
        self._room = self.max_tokens if unit == "tokens" else max_chars
        self._full = False
        self._upto = 0
        self._cuts: list[Message] = []  # unit="items": history[i] as cut

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self._forget()

    def end_session(self) -> None:
        super().end_session()
        self._forget()

    def _forget(self) -> None:
        self._kept, self._full, self._upto, self._cuts = [], False, 0, []
        self._room = self.max_tokens if self.unit == "tokens" else self.max_chars

    def params(self) -> dict[str, Any]:
        if self.unit == "tokens":
            return {"unit": "tokens", "max_tokens": self.max_tokens}
        if self.unit == "items":
            return {"unit": "items", "max_chars": self.max_chars}
        return {"max_chars": self.max_chars}

    def _size(self, text: str) -> int:
        return self.count_tokens(text) if self.unit == "tokens" else len(text)

    def _head(self, text: str, room: int) -> str:
        """The longest start of ``text`` that fits ``room`` units."""
        if self.unit == "chars":
            return text[:room]
        low, high = 0, len(text)  # tokens grow with length: binary search the cut
        while low < high:
            mid = (low + high + 1) // 2
            if self.count_tokens(text[:mid]) <= room:
                low = mid
            else:
                high = mid - 1
        return text[:low]

    def window(self) -> Window:
        if not self.history:
            return Window(messages=[])
        # The current message (with the call it answers) always goes in, unaltered.
        start = current_exchange_start(self.history)
        if self.unit == "items":
            return Window(messages=self._items_cut(start) + self.history[start:])
        if start < self._upto:  # not expected: the current exchange only moves on
            self._forget()
        kept = self._kept
        for message in self.history[self._upto : start]:
            if message.get("role") == "system":
                kept.append(message)  # not counted: the system prompt is never cut
                continue
            if self._full:
                continue
            text = content_text(message)
            size = self._size(text)
            if size <= self._room:
                kept.append(message)
                self._room -= size
                continue
            head = self._head(text, self._room) if self._room > 0 else ""
            if head:
                kept.append({**message, "content": head})
            self._full = True
        self._upto = start
        return Window(messages=pair_tool_calls(kept) + self.history[start:])

    def _items_cut(self, end: int) -> list[Message]:
        """The naive per-item cut: every message before ``end`` (but the system
        prompt) keeps its first ``max_chars`` characters; nothing is dropped."""
        cuts = self._cuts
        for message in self.history[len(cuts) : end]:
            text = content_text(message)
            if message.get("role") != "system" and len(text) > self.max_chars:
                message = {**message, "content": text[: self.max_chars] + ITEM_CUT}
            cuts.append(message)
        return cuts[:end]


def pair_tool_calls(messages: list[Message]) -> list[Message]:
    """Drop tool calls whose results are gone, and results whose call is gone."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    called: set[Any] = set()
    out: list[Message] = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            live = [call for call in calls if call.get("id") in answered]
            if len(live) < len(calls):
                message = {k: v for k, v in message.items() if k != "tool_calls"}
                if live:
                    message["tool_calls"] = live
                elif not content_text(message):
                    continue  # nothing left of it
            called.update(call.get("id") for call in live)
        elif message.get("role") == "tool" and message.get("tool_call_id") not in called:
            continue
        out.append(message)
    return out
