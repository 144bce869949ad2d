"""JSONL result store: append and flush each record as soon as it exists."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from ..redact import scrub_json
from ..safe_files import open_no_follow, utf8, write_all
from .reading import read_results
from .record import ResultRecord, record_data
from .record_text import record_dumps

if TYPE_CHECKING:  # pandas is imported only when a frame is asked for
    import pandas as pd


class ResultWriter:
    """Appends records to a JSONL file; each line is written at once so an
    interrupted run keeps everything already finished.  The file is opened
    without following a symbolic link; a line that cannot be written whole (a
    full disk, a file-size limit) is taken back, so the lines before it stay
    intact, and OSError says why."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0  # records on disk
        # A new file, never the old one emptied in place: the old one's data
        # may live on under another name (a hard link in the run history, or
        # the earlier results a partial rerun merges), which must stay whole.
        if not path.is_symlink():  # a link is refused below, by name
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._fd = open_no_follow(path)
        self._end = 0  # bytes of whole lines

    def write(self, record: ResultRecord) -> None:
        # Scrubbed again here, where every record passes on its way to disk,
        # whoever built it.
        line = utf8(record_json(record) + "\n")
        try:
            write_all(self._fd, line)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._end)
                os.lseek(self._fd, self._end, os.SEEK_SET)
            raise
        self._end += len(line)
        self.written += 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def record_json(record: ResultRecord) -> str:
    """One record as a line of the results file (keys sorted, secrets scrubbed).

    A record's values are plain JSON values already (built by the harness or
    read from JSON), and written as they are they give the same line as
    pydantic's JSON dump, about seven times faster; a value JSON cannot write
    as it is (a set, an object) goes through pydantic's dump."""
    try:
        return scrub_json(record_data(record), record_dumps)
    except (TypeError, ValueError):
        return scrub_json(record.model_dump(mode="json"))


@overload
def load_results(path: str | Path) -> list[ResultRecord]: ...
@overload
def load_results(path: str | Path, *, as_frame: Literal[False]) -> list[ResultRecord]: ...
@overload
def load_results(path: str | Path, *, as_frame: Literal[True]) -> pd.DataFrame: ...


def load_results(path: str | Path, *, as_frame: bool = False) -> list[ResultRecord] | pd.DataFrame:
    """Read a results file; a line that is not a record raises ValueError
    naming the file and line.  The records of one session share equal
    per-session values (its fact ledger, its series) as one object: copy one
    before changing it in place.  ``as_frame=True``: a pandas frame with
    typed columns instead (see ``results.analysis.results_frame``)."""
    if as_frame:
        from .analysis import results_frame

        return results_frame(path)
    return read_results(Path(path))


def write_results(path: Path, records: Iterable[ResultRecord]) -> None:
    writer = ResultWriter(path)
    try:
        for record in records:
            writer.write(record)
    finally:
        writer.close()
