"""Strategies that rewrite tool results and leave everything else alone:
``toolprune``, ``observation-mask`` and ``subagent``.

Each tool result is rewritten at most once (history never changes), except
the last ``keep_last`` results, which go in whole.  Only a result's content
changes, so a call and its result always stay together.
"""

from __future__ import annotations

import bisect
from typing import Any

from .base import BaseStrategy, Message, Window
from .turns import fit_budget, require_at_least
from .unchanged_prefix import TracksUnchangedPrefix, bring_up_to_date


class ToolResultStrategy(TracksUnchangedPrefix, BaseStrategy):
    """Base: subclasses say how one older tool result is condensed."""

    # Keeps one message per message, in order: may come before another pipeline stage.
    rewrites_in_place = True

    def __init__(self, keep_last: int, budget_tokens: int | None = None) -> None:
        super().__init__()
        require_at_least(self.name, 0, keep_last=keep_last)
        self.keep_last = keep_last
        self.budget_tokens = budget_tokens
        # The window as it stands, kept up to date in add() and window(): a
        # result only ever goes from whole to condensed, so each call does the
        # new work only (a 1,000-turn session must not cost turns x messages).
        self._shown: list[Message] = []
        self._results: list[int] = []  # history indices of tool results
        self._condensed_upto = 0  # results before this position in _results are condensed
        # What lent_window() hands out: _shown as of the last window, with the
        # positions changed since (_relent) brought up to date at the next one.
        self._lent: list[Message] = []
        self._relent: list[int] = []

    def params(self) -> dict[str, Any]:
        return {"keep_last": self.keep_last, "budget_tokens": self.budget_tokens}

    def add(self, message: Message) -> None:
        super().add(message)
        self._shown.append(message)
        if message.get("role") == "tool":
            self._results.append(len(self.history) - 1)

    def window(self) -> Window:
        self._condense_due()
        shown = list(self._shown)
        messages = fit_budget(shown, self.budget_tokens, self.count_tokens)
        self._window_built(len(shown), whole=messages is shown)
        return Window(messages=messages)

    def lent_window(self) -> Window:
        """``window()``, whose message list is this strategy's own: valid until
        the next call, which brings it up to date in place (see lent_window_of),
        so a long session costs its new messages, not a copy per turn."""
        if self.budget_tokens is not None:
            return self.window()  # a budget cuts a new list anyway
        self._condense_due()
        bring_up_to_date(self._lent, self._shown, self._relent)
        self._window_built(len(self._lent))
        return Window(messages=self._lent)

    def _condense_due(self) -> None:
        """Condense the results that left the last ``keep_last``."""
        whole_from = max(len(self._results) - self.keep_last, 0)
        for index in self._results[self._condensed_upto : whole_from]:
            self._shown[index] = self.condense(index, self.history[index])
            self._changed(index)
            self._mark_relent(index)
        self._condensed_upto = max(self._condensed_upto, whole_from)

    def _mark_relent(self, index: int) -> None:
        # Only positions the lent list already holds: the rest come with its
        # new tail, and a strategy that never lends keeps no list of them.
        if index < len(self._lent):
            self._relent.append(index)

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        position = bisect.bisect_left(self._results, index)
        condensed = position < self._condensed_upto and self._results[position] == index
        self._shown[index] = self.condense(index, message) if condensed else message
        self._changed(index)
        self._mark_relent(index)

    def end_session(self) -> None:
        super().end_session()
        self._shown = list(self.history)  # the new chat's history: its system prompt
        self._results, self._condensed_upto = [], 0
        self._lent, self._relent = [], []  # a new list: the old chat's stays as it was
        self._changed(0)

    def condense(self, index: int, message: Message) -> Message:  # pragma: no cover - abstract
        raise NotImplementedError
