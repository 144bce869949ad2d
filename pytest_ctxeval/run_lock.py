"""One run at a time per output folder.

Two runs writing ``reports/`` at once (two terminals, two CI steps sharing a
workspace) would interleave their records and tear lines.  The run that
records takes an exclusive lock on ``.ctxeval.lock`` in the folder of its
results file and of its report; a second run finds the lock held and stops
with one line naming the first run's process.  The lock is the operating
system's (``flock``): it goes when the process does, however it ends, so a
killed run leaves no stale lock behind.  Only the process that writes (the
controller under xdist) takes it; its workers send their records to it."""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no lock (and none of the links this also guards against)
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".ctxeval.lock"


class OutputsBusy(Exception):
    """Another run holds the lock; the message says which and where."""


class RunLock:
    """The locks of one run; ``release`` lets them go."""

    def __init__(self) -> None:
        self._held: dict[Path, int] = {}

    def take(self, option: str, path: Path) -> None:
        """Lock the folder ``path`` is written to; OutputsBusy if another run has it."""
        folder = path.parent
        if fcntl is None or folder in self._held:
            return
        lock = folder / LOCK_NAME
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, flags, 0o666)
        except OSError:
            # The folder's own problems are reported where it is written; a
            # lock that cannot be made is no reason to stop the run.
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _read(fd) or "another process"
            os.close(fd)
            raise OutputsBusy(
                f"{option}: {path} is being written by another run ({holder}; lock file {lock}); "
                "wait for it to end, or give this run its own --ctx-results and --ctx-report"
            ) from None
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, started {now}\n".encode(), 0)
        self._held[folder] = fd

    def release(self) -> None:
        for fd in self._held.values():
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the descriptor releases the lock
        self._held.clear()


def _read(fd: int) -> str:
    with contextlib.suppress(OSError):
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    return ""
