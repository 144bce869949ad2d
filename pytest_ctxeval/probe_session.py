"""The session a probe's window is checked and traced against: the history
before the probe (a conversation's own list, which never changes once built)
and the probe question.  The window rules and the window trace index the
history once per history (``indexed``), not once per probe: a LoCoMo-size
session has some 600 messages and 200 probes under each strategy."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar, overload

from .messages import Message

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# Indexes kept, the oldest dropped first: a run works on one scenario at a time.
KEPT_INDEXES = 32
_indexes: dict[tuple[str, int], tuple[list[Message], int, Any]] = {}


class ProbeSession(Sequence[Message]):
    """``history`` then ``current``, as one sequence, without copying the history."""

    def __init__(self, history: list[Message], current: Message) -> None:
        self.history = history
        self.current = current

    def __len__(self) -> int:
        return len(self.history) + 1

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [*self.history, self.current][index]
        if index == len(self.history) or index == -1:
            return self.current
        if index < -1:
            index += 1  # -2 is the history's last
        return self.history[index]

    def __iter__(self) -> Iterator[Message]:
        yield from self.history
        yield self.current


def indexed(history: list[Message], what: str, build: Callable[[list[Message]], T]) -> T:
    """``build(history)``, worked out once per history list and ``what``
    (the list is held, so its id stays its own; its length is checked)."""
    key = (what, id(history))
    found = _indexes.get(key)
    if found is not None and found[0] is history and found[1] == len(history):
        return found[2]  # type: ignore[no-any-return]
    if len(_indexes) >= KEPT_INDEXES:
        del _indexes[next(iter(_indexes))]
    value = build(history)
    _indexes[key] = (history, len(history), value)
    return value


def positions_of(
    session: Sequence[Message], what: str, key: Callable[[Message], K]
) -> Callable[[K], list[int]]:
    """Where each ``key`` stands in ``session``, ascending (empty when
    nowhere).  A probe's history is indexed once for all its probes (under
    ``what``), its question looked up on its own."""
    if not isinstance(session, ProbeSession):
        at = _positions(session, key)
        return lambda wanted: at.get(wanted, [])
    at = indexed(session.history, what, lambda history: _positions(history, key))
    current, last = key(session.current), len(session.history)

    def where(wanted: K) -> list[int]:
        found = at.get(wanted, [])
        return [*found, last] if wanted == current else found

    return where


def _positions(messages: Sequence[Message], key: Callable[[Message], K]) -> dict[K, list[int]]:
    at: dict[K, list[int]] = {}
    for index, message in enumerate(messages):
        at.setdefault(key(message), []).append(index)
    return at
