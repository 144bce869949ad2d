"""``full``: everything, appended — the ground truth and the cost baseline."""

from __future__ import annotations

from .base import BaseStrategy, Message, Window
from .registration import register_strategy
from .unchanged_prefix import TracksUnchangedPrefix, bring_up_to_date, tracks_unchanged_prefix


@register_strategy("full")
@tracks_unchanged_prefix
class FullStrategy(TracksUnchangedPrefix, BaseStrategy):
    name = "full"
    description = "Everything, appended: the model sees the whole session on every call."

    def __init__(self) -> None:
        super().__init__()
        # The list lent_window() hands out: the history as of the last window,
        # brought up to date only when the next window is built.
        self._lent: list[Message] = []
        self._revised: list[int] = []

    def end_session(self) -> None:
        """The ground truth remembers every earlier chat."""

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self._changed(index)
        if index < len(self._lent):  # the rest come with the lent list's new tail
            self._revised.append(index)

    def window(self) -> Window:
        # A new list, so a caller appending to the window cannot change history.
        messages = list(self.history)
        self._window_built(len(messages))  # each window starts with the one before
        return Window(messages=messages)

    def lent_window(self) -> Window:
        """``window()``, whose message list is this strategy's own: valid until
        the next call, which brings it up to date in place (see lent_window_of).
        A copy of the whole history per turn would make a session quadratic."""
        bring_up_to_date(self._lent, self.history, self._revised)
        self._window_built(len(self._lent))
        return Window(messages=self._lent)
