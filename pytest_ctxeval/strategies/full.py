"""``full``: everything, appended — the ground truth and the cost baseline."""

from __future__ import annotations

from .base import BaseStrategy, Window
from .registry import register_strategy


@register_strategy("full")
class FullStrategy(BaseStrategy):
    name = "full"
    description = "Everything, appended: the model sees the whole session on every call."

    def end_session(self) -> None:
        """The ground truth remembers every earlier chat."""

    def window(self) -> Window:
        # A new list, so a caller appending to the window cannot change history.
        return Window(messages=list(self.history))
