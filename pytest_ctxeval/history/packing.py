"""Kept runs hold their results gzip-compressed, all but the newest: a
LoCoMo-size results file is 486 MB plain and about 80 MB so, and twenty
runs are kept.  The newest run's results file is also the latest results
(one file, two names), so it stays plain until a later run replaces them.

Compressing takes seconds at that size (1.8 s of CPU for 486 MB), so a
run compresses the runs it finds in a thread beside its own work (zlib runs
without holding the interpreter's lock) and waits for it only before it
keeps itself.  Each file is compressed under a temporary name, renamed into
place, and only then is the plain file removed: a reader finds one or the
other whole, and a run killed on the way leaves at worst both (the next
run compresses that one again)."""

from __future__ import annotations

import threading
from pathlib import Path

from ..safe_files import replace_with_gzip
from .store import PACKED_RESULTS_NAME, RESULTS_NAME, list_runs

# Level 1: about a sixth of the size at over 100 MB/s; level 6 gives a ninth
# at less than half the speed.
LEVEL = 1


class Packing:
    """``pack_runs(folder)`` in a thread of its own, from now until ``wait``."""

    def __init__(self, folder: Path) -> None:
        self._thread = threading.Thread(
            target=_pack_quietly, args=(folder,), name="ctxeval-pack-runs", daemon=True
        )
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()


def pack_runs(folder: Path) -> list[Path]:
    """Compress the results of every run kept in ``folder`` that holds them
    plain; the runs compressed.  OSError when one cannot be (a full disk):
    its plain file is left as it was."""
    packed = []
    for entry in list_runs(folder):
        if pack_run(entry.folder):
            packed.append(entry.folder)
    return packed


def pack_run(run: Path) -> bool:
    """``run``'s results compressed: whether there was a plain file to do."""
    plain, packed = run / RESULTS_NAME, run / PACKED_RESULTS_NAME
    for leftover in run.glob(f".{PACKED_RESULTS_NAME}.*.tmp"):  # of a run killed while packing
        leftover.unlink(missing_ok=True)
    if plain.is_symlink() or not plain.is_file():
        return False
    # Over any compressed file already there (a run killed before it removed
    # the plain one, or a link): the plain file is the one known whole.
    replace_with_gzip(packed, plain, level=LEVEL)
    plain.unlink()
    return True


def _pack_quietly(folder: Path) -> None:
    # Nothing is lost when a run cannot be compressed: it stays plain, and
    # the next run tries again.
    try:
        pack_runs(folder)
    except OSError:
        pass
