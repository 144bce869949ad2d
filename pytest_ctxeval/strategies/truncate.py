"""``truncate``: keep the first ``max_chars`` characters, drop the rest.

The naive baseline: it keeps the start of the session, so follow-ups about
recent answers lose their referent.
"""

from __future__ import annotations

from typing import Any

from .base import BaseStrategy, Message, Window, content_text, current_exchange_start
from .registry import register_strategy


@register_strategy("truncate")
class TruncateStrategy(BaseStrategy):
    name = "truncate"
    description = "Keep the first max_chars characters of the conversation and drop the rest."

    def __init__(self, max_chars: int = 6000) -> None:
        super().__init__()
        if max_chars < 0:
            raise ValueError(f"truncate: max_chars must be >= 0, got {max_chars!r}")
        self.max_chars = max_chars

    def params(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}

    def window(self) -> Window:
        if not self.history:
            return Window(messages=[])
        # The current message (with the call it answers) always goes in, unaltered.
        start = current_exchange_start(self.history)
        kept: list[Message] = []
        room = self.max_chars
        full = False
        for message in self.history[:start]:
            if message.get("role") == "system":
                kept.append(message)  # not counted: the system prompt is never cut
                continue
            if full:
                continue
            text = content_text(message)
            if len(text) <= room:
                kept.append(message)
                room -= len(text)
                continue
            if room > 0:
                kept.append({**message, "content": text[:room]})
            full = True
        return Window(messages=pair_tool_calls(kept) + self.history[start:])


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
