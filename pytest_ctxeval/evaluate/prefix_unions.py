"""What a window holds, kept up to date as the window grows.

Each request's window is mostly the one before: the same objects up to some
point, then new ones.  The union of what its items hold (the facts a
message shows, or a stored text keeps) is kept for the leading items at each
point where it grows, so a window that keeps the previous one's first
``shared`` items costs its new items only, not the whole window per request.
The union grows at most once per distinct thing found, so the points are few.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")
Found = frozenset[tuple[str, int]]


class PrefixUnions(Generic[T]):
    """The union of ``found(item)`` over a list's items from ``start`` on."""

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self._ends: list[int] = []  # items counted (from start) where the union grew
        self._unions: list[Found] = []  # the union over those items
        self._length = 0  # items counted in the last list

    def union(self, items: Sequence[T], shared: int, found: Callable[[T], Found]) -> Found:
        """The union over ``items`` (from ``start``), whose first ``shared``
        counted items are the last list's."""
        shared = max(0, min(shared, self._length))
        kept = bisect.bisect_right(self._ends, shared)
        del self._ends[kept:], self._unions[kept:]
        union = self._unions[-1] if self._unions else frozenset()
        for position in range(self.start + shared, len(items)):
            got = found(items[position])
            if not got <= union:
                union = union | got
                self._ends.append(position - self.start + 1)
                self._unions.append(union)
        self._length = max(len(items) - self.start, 0)
        return union


class Unchanged(NamedTuple):
    """How much of a window is the previous window's very objects: its first
    ``prefix`` messages or, when that is none, the ``after_first`` messages
    after its first; and its first ``retrievable`` texts (None: not known)."""

    prefix: int
    after_first: int
    retrievable: int | None = None
