"""``sliding``: the system prompt plus the last ``turns`` turns (or, with
``messages``, the last that many messages).

A turn starts at a user message (LangChain ``trim_messages(strategy="last",
start_on="human")``), so a tool call and its result always fall in the same
turn and are kept or dropped together.
"""

from __future__ import annotations

from typing import Any

from .base import BaseStrategy, Window, current_exchange_start, system_length
from .registration import register_strategy
from .turns import safe_cut


@register_strategy("sliding")
class SlidingStrategy(BaseStrategy):
    name = "sliding"
    description = "The system prompt plus the last k turns, each starting at a user message."

    def __init__(
        self, turns: int = 6, keep_system: bool = True, messages: int | None = None
    ) -> None:
        super().__init__()
        if turns < 1:
            raise ValueError(f"sliding: turns must be >= 1, got {turns!r}")
        if messages is not None and messages < 1:
            raise ValueError(f"sliding: messages must be >= 1, got {messages!r}")
        self.turns = turns
        self.keep_system = keep_system
        # A window of the last N messages instead of N turns (the chat-app way).
        self.messages = messages

    def params(self) -> dict[str, Any]:
        if self.messages is not None:
            return {"messages": self.messages, "keep_system": self.keep_system}
        return {"turns": self.turns, "keep_system": self.keep_system}

    def window(self) -> Window:
        # Indices into the history itself, never a copy of it: a window costs
        # its own length, not the session's.
        history = self.history
        offset = system_length(history)  # the leading system messages
        pinned = history[:offset] if self.keep_system else []
        if offset == len(history):
            # Only system messages so far: the last one is the current message.
            return Window(messages=pinned or history[-1:])
        if self.messages is not None:
            # The last N messages, moved back so no tool result loses its call.
            cut = safe_cut(history, max(len(history) - self.messages, offset))
            begin = min(max(cut, offset), current_exchange_start(history))
            return Window(messages=pinned + history[begin:])
        # The k-th user message from the end (or the first there is), found
        # from the end.
        start: int | None = None
        seen = 0
        for index in range(len(history) - 1, offset - 1, -1):
            if history[index].get("role") == "user":
                start, seen = index, seen + 1
                if seen == self.turns:
                    break
        if start is None:
            # No user message yet: keep at least the current message and its call.
            start = current_exchange_start(history)
        return Window(messages=pinned + history[start:])
