"""How much of each window a strategy builds is the very objects of the window
it built before: replay and pipelines then look at the rest only, so a long
session costs its new messages, not turns x messages.

A strategy that builds each window from one list it keeps (its history, or
the messages as it shows them) and changes that list in place can know this
without comparing: it notes each message it replaces.  Only the built-in
strategies marked with ``tracks_unchanged_prefix`` are taken at their word,
and only as they are: a subclass, or a wrapper, may edit the window after.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

_TRACKING: set[type] = set()


def tracks_unchanged_prefix(cls: type[T]) -> type[T]:
    """Class decorator of a built-in strategy whose claims about its windows
    (``unchanged_prefix`` and the others read below, those it makes) hold."""
    _TRACKING.add(cls)
    return cls


def unchanged_prefix_of(strategy: object) -> int | None:
    """How many leading messages of the window ``strategy`` built last are
    the very objects of the window it built before, when it is one of the
    marked strategies itself; None when that is not known."""
    return _claim(strategy, "unchanged_prefix")


def unchanged_after_first_of(strategy: object) -> int | None:
    """When the window ``strategy`` built last has a new first message: how
    many after it are the very objects of the window before, when it is a
    marked strategy that knows it; None when that is not known."""
    return _claim(strategy, "unchanged_after_first")


def unchanged_retrievable_of(strategy: object) -> int | None:
    """How many leading texts of the window ``strategy`` built last say it
    can retrieve (``Window.retrievable``) are the very texts the window
    before listed, when it is a marked strategy whose store only grows;
    None when that is not known."""
    return _claim(strategy, "unchanged_retrievable")


def _claim(strategy: object, name: str) -> int | None:
    """What a marked strategy says of its last window (None: it does not say)."""
    if type(strategy) in _TRACKING:
        return getattr(strategy, name, None)
    return None


class ListsAGrowingStore:
    """Mixin: a store of retrievable texts that only grows (texts are
    appended, never replaced or removed), handed to each window through
    ``_retrievable``; ``unchanged_retrievable`` follows.  The replay then
    counts the tokens of the new texts only, not of the whole store per turn."""

    unchanged_retrievable: int | None = None
    _retrievable_listed = 0  # how many texts the last window listed

    def _retrievable(self, store: list[str], *, lent: bool = False) -> list[str]:
        """``store`` for the window: a copy, or for a lent window (see
        lent_window_of) the store itself, as long as the session copying it
        every turn would be."""
        self.unchanged_retrievable, self._retrievable_listed = self._retrievable_listed, len(store)
        return store if lent else list(store)


class TracksUnchangedPrefix:
    """Mixin: note each replaced message (``_changed``) and each window built
    (``_window_built``); ``unchanged_prefix`` follows."""

    unchanged_prefix: int | None = None
    _first_changed = 0  # the first message replaced since the last window
    _last_whole: int | None = None  # that window's length; None: it was cut

    def _changed(self, index: int) -> None:
        self._first_changed = min(self._first_changed, index)

    def _window_built(self, length: int, *, whole: bool = True) -> None:
        """A window of the kept list's ``length`` messages, all of them
        (``whole``) or cut (to a budget: then nothing is claimed)."""
        last = self._last_whole
        self.unchanged_prefix = (
            min(self._first_changed, last) if whole and last is not None else None
        )
        self._first_changed, self._last_whole = length, length if whole else None


def keeps_sent_messages(strategy: object) -> bool:
    """Whether ``strategy`` is known never to change a message (or tool list)
    after putting it in a window: the built-in strategies as they are (a
    pipeline, when all its stages are).  Any other strategy may edit what it
    sent in place, so the harness compares what it sends by content."""
    cls = type(strategy)
    if not cls.__module__.startswith(_BUILT_IN):
        return False
    stages = getattr(strategy, "stages", None)
    return stages is None or all(keeps_sent_messages(stage) for stage in stages)


_BUILT_IN = __name__.rsplit(".", 1)[0] + "."


def lent_window_of(strategy: Any) -> tuple[Any, bool]:
    """The strategy's next window, and whether its lists are lent: its
    message list and its retrievable texts may be the strategy's own, valid
    until its next window, which changes them in place. Only the marked
    built-in strategies that offer ``lent_window`` lend theirs (a caller that
    keeps a lent list past that copies it); a long session then costs its new
    messages, not a copy of the whole window per turn."""
    lend = getattr(strategy, "lent_window", None) if type(strategy) in _TRACKING else None
    if callable(lend):
        return lend(), True
    return strategy.window(), False


def bring_up_to_date(lent: list[Any], source: list[Any], changed: list[int]) -> None:
    """Make the lent list equal to ``source`` in place: the positions in
    ``changed`` are set again (then forgotten), the new tail is appended."""
    for index in changed:
        if index < len(lent):
            lent[index] = source[index]
    changed.clear()
    lent.extend(source[len(lent) :])
