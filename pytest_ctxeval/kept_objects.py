"""What a run keeps to its end, kept out of the cycle collector's full passes.

A run keeps every record until its report is written: on a LoCoMo-size run,
millions of objects (a record's window trace and fact ledger are hundreds of
small lists and dicts).  Python's cycle collector walks every tracked object
on each full pass, and a growing heap triggers one each time it grows by a
quarter: with a run's records tracked, reading a record on the xdist
controller took 1.5 ms instead of 0.3 ms.  Records hold no reference cycles,
so freezing them (``gc.freeze``) loses nothing: reference counting still
frees them.  The young generations are collected first, so no cyclic
garbage is frozen with them; the plugin unfreezes everything when pytest is
done (see plugin.pytest_load_initial_conftests).

Reading a scenario file and evaluating an item build much that lives on
(a long session's messages, its per-request series and window trace): the
collector's young pass, every 700 new objects by default, moves each of
them up a generation, and each move brings the next full pass closer.  With
the young pass every 50,000 objects instead, a 10 MB session under three
strategies took 23 s instead of 30 s, in the same memory."""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

# Records between two freezes: a freeze costs a young-generation pass.
FREEZE_EVERY_RECORDS = 256
# New objects between two of the collector's young passes while scenarios
# are read and items evaluated (Python's default is 700).
YOUNG_PASS_EVERY = 50_000


def keep_out_of_full_collections() -> None:
    """Freeze everything alive now (a run that turned the collector off is left alone)."""
    if gc.isenabled():
        gc.collect(1)
        gc.freeze()


def keep_to_the_end() -> None:
    """Freeze everything alive now (what collection built lives to the end
    of the session), and have the interpreter's last collection, as the
    process exits, skip whatever the run leaves alive: it would walk all of
    it (0.3-0.6 s after a large run) to free nothing that exiting does not."""
    gc.freeze()
    skip_the_last_collection()


def skip_the_last_collection() -> None:
    """Have the interpreter's last collection, as the process exits, skip
    whatever the run leaves alive (the xdist controller's records: 0.5 s
    after 1,200 items)."""
    atexit.unregister(_freeze_at_exit)  # once, however many runs in one process
    atexit.register(_freeze_at_exit)


def _freeze_at_exit() -> None:
    gc.freeze()  # runs only as the interpreter exits, after pytest is done


@contextlib.contextmanager
def fewer_young_passes() -> Iterator[None]:
    """The collector's young pass at most every YOUNG_PASS_EVERY new objects
    for the duration (a threshold already as high, or a collector turned
    off, is left alone); the thresholds are put back after."""
    young, *older = gc.get_threshold()
    if not gc.isenabled() or young == 0 or young >= YOUNG_PASS_EVERY:
        yield
        return
    gc.set_threshold(YOUNG_PASS_EVERY, *older)
    try:
        yield
    finally:
        gc.set_threshold(young, *older)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cycle collection for the duration: for reading a results file
    outside a run (``ctxeval report``, ``compare``, ``merge``,
    ``load_results``).  Its records hold no reference cycles, yet each full
    pass while they pile up walks all of them: 16,720 LoCoMo-size records
    took 24 s to read instead of 4.7 s.  Unlike freezing, this leaves the
    caller's process as it was (a notebook's cyclic garbage is still
    collected, later)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
