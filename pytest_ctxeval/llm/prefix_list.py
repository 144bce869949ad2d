"""A list that shares its leading items with the list it was cut from.

The prompt cache keeps, for every request of a session, each message's
digest and a hash and token count at every block boundary.  A request that
rewrites one message near the end of its window (a pruned tool output) keeps
everything before it: copying those leading items into new lists would cost
every request its whole window, and a long session turns x window.

Items live in chunks of ``CHUNK`` items.  A full chunk never changes again,
so ``prefix`` hands the full chunks on by reference and copies only the
last, partly filled one: cutting costs window / ``CHUNK``, not the window.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T")

CHUNK = 256


class PrefixList(Sequence[T], Generic[T]):
    """Append-only: ``append``, ``extend``, ``prefix``; read like a list."""

    __slots__ = ("_chunks", "_length")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._chunks: list[list[T]] = []
        self._length = 0
        self.extend(items)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            return list(itertools.islice(self.iter_from(start), 0, max(stop - start, 0), step))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("PrefixList index out of range")
        return self._chunks[index // CHUNK][index % CHUNK]

    def __iter__(self) -> Iterator[T]:
        return self.iter_from(0)

    def iter_from(self, start: int) -> Iterator[T]:
        """The items from ``start`` on, without walking the ones before."""
        first, skip = divmod(max(start, 0), CHUNK)
        items = itertools.chain.from_iterable(itertools.islice(self._chunks, first, None))
        return itertools.islice(items, skip, max(self._length - first * CHUNK, skip))

    def append(self, item: T) -> None:
        self.extend([item])

    def extend(self, items: Iterable[T]) -> None:
        pending = items if isinstance(items, list) else list(items)
        start = 0
        while start < len(pending):
            room = CHUNK - self._length % CHUNK
            taken = pending[start : start + room]
            if room == CHUNK:
                self._chunks.append(taken)
            else:
                # The last chunk is this list's own: ``prefix`` copies a partial one.
                self._chunks[-1].extend(taken)
            self._length += len(taken)
            start += len(taken)

    def last_agreeing(self, other: PrefixList[T], length: int) -> int:
        """The last index below ``length`` at which both lists hold equal
        items, or -1, for lists that agree up to some index and differ from
        there on (chained prefix hashes): a binary search."""
        mine, theirs = self._chunks, other._chunks
        low, high = -1, min(length, self._length, other._length) - 1
        while low < high:
            middle = (low + high + 1) // 2
            chunk, at = divmod(middle, CHUNK)
            if mine[chunk] is theirs[chunk] or mine[chunk][at] == theirs[chunk][at]:
                low = middle
            else:
                high = middle - 1
        return low

    def prefix(self, length: int) -> PrefixList[T]:
        """A new list of the first ``length`` items; this one is unchanged."""
        if not 0 <= length <= self._length:
            raise IndexError("PrefixList prefix longer than the list")
        full, rest = divmod(length, CHUNK)
        cut: PrefixList[T] = PrefixList()
        cut._chunks = self._chunks[:full]
        if rest:
            cut._chunks.append(self._chunks[full][:rest])
        cut._length = length
        return cut

    def replaced(self, index: int, item: T) -> PrefixList[T]:
        """A new list with ``item`` at ``index``; this one is unchanged.  Only
        the chunk holding ``index`` and a partly filled last chunk (which
        the new list may append to) are copied."""
        if not 0 <= index < self._length:
            raise IndexError("PrefixList index out of range")
        copy: PrefixList[T] = PrefixList()
        copy._chunks = list(self._chunks)
        copy._length = self._length
        chunk, at = divmod(index, CHUNK)
        copy._chunks[chunk] = list(self._chunks[chunk])
        copy._chunks[chunk][at] = item
        last = len(copy._chunks) - 1
        if last != chunk and self._length % CHUNK:
            copy._chunks[last] = list(self._chunks[last])
        return copy

    def __repr__(self) -> str:
        return f"PrefixList({list(self)!r})"
