"""Running totals of a per-message figure over a window, kept from request
to request.

A session's requests mostly repeat the window before and add to it, so the
totals over ``messages[:i]`` are kept and only the messages after the shared
part are added.  A window whose first message alone is new (a clock in the
system prompt, rewritten on every request) keeps every total after it too:
the first message's share is an offset on them, so such a session still
costs its new messages only, not requests x window.
"""

from __future__ import annotations


class RunningTotals:
    """``at(i)``: the figure summed over the window's first ``i`` messages."""

    __slots__ = ("_totals", "_shift")

    def __init__(self) -> None:
        self._totals = [0]  # over messages[:i], before the shift
        self._shift = 0  # added to every total that includes the first message

    def __len__(self) -> int:
        """How many messages the totals cover."""
        return len(self._totals) - 1

    def at(self, length: int) -> int:
        return self._totals[length] + (self._shift if length else 0)

    @property
    def last(self) -> int:
        return self.at(len(self._totals) - 1)

    def keep(self, length: int) -> None:
        """Forget the messages after the first ``length``."""
        del self._totals[length + 1 :]  # in place: a session's list grows, not copied
        if not length:
            self._shift = 0

    def add(self, value: int) -> None:
        self._totals.append(self._totals[-1] + value)

    def rewrite_first(self, value: int) -> None:
        """The first message is now one whose figure is ``value``."""
        if not len(self):
            raise IndexError("no first message to rewrite")
        self._shift += value - (self.at(1) - self.at(0))
