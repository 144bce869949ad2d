"""``full``: everything, appended — the ground truth and the cost baseline."""

from __future__ import annotations

from .base import BaseStrategy, Message, Window
from .registration import register_strategy
from .unchanged_prefix import TracksUnchangedPrefix, tracks_unchanged_prefix


@register_strategy("full")
@tracks_unchanged_prefix
class FullStrategy(TracksUnchangedPrefix, BaseStrategy):
    name = "full"
    description = "Everything, appended: the model sees the whole session on every call."

    def end_session(self) -> None:
        """The ground truth remembers every earlier chat."""

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self._changed(index)

    def window(self) -> Window:
        # A new list, so a caller appending to the window cannot change history.
        messages = list(self.history)
        self._window_built(len(messages))  # each window starts with the one before
        return Window(messages=messages)
