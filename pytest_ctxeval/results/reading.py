"""Reading a results file record by record: below both the store and the
frames built from it."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ..kept_objects import collector_paused
from .record import ResultRecord
from .record_lines import RecordLines


def iter_results(path: Path) -> Iterator[ResultRecord]:
    """The records of ``path`` in order; equal values that a session's
    records repeat (its fact ledger, its per-request series) are one object,
    as in the run that wrote them.  ValueError names the line that is not a
    record, or where a compressed file stops being one."""
    lines = RecordLines()
    with open_results(path) as fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
                raise ValueError(
                    f"{path}:{lineno + 1}: expected gzip-compressed result records, "
                    f"the file is cut short or damaged here ({exc})"
                ) from None
            if not line:
                return
            lineno += 1
            if not line.strip():
                continue
            try:
                record = lines.record(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: not a result record: {exc}") from None
            yield record


def is_gzip(path: Path) -> bool:
    """Whether ``path`` is gzip-compressed (by its first bytes, not its name)."""
    with path.open("rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_results(path: Path) -> TextIO:
    """``path`` opened for reading its lines, as text whether it is plain or
    gzip-compressed (a kept run's results, or a file a user compressed)."""
    if is_gzip(path):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def read_results(path: Path) -> list[ResultRecord]:
    """All the records of ``path``, read without the cycle collector walking
    them again and again as they pile up (see kept_objects.collector_paused)."""
    with collector_paused():
        return list(iter_results(path))
