"""What a run could not write (a full disk, a file-size limit, a folder
gone read-only), said in one line per file.

A failed write never stops the run with an INTERNALERROR: the results file
keeps every whole record written before it (see results/store.py), the run
goes on to write what it still can, and it exits with OUTPUT_LOST so CI can
tell a broken disk from a regression."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .results.record import ResultRecord
    from .results.store import ResultWriter

# pytest uses 0-5; the gate 6 to 9 (see gate/exitcodes.py).
OUTPUT_LOST = 10


@dataclass
class OutputLoss:
    path: Path
    what: str  # e.g. "the report", "records"
    error: OSError
    # For the results file: records that reached it, and all the run made.
    written: int = 0
    total: int = 0

    def line(self) -> str:
        reason = self.error.strerror or errno.errorcode.get(self.error.errno or 0, str(self.error))
        if self.what == "records":
            lost = self.total - self.written
            kept = (
                f"the first {self.written:,} are in the file, each whole"
                if self.written
                else "the file has none"
            )
            said = f"lost {lost:,} of {self.total:,} records ({kept})"
        else:
            said = f"lost {self.what}"
        return f"ctxeval: could not write {self.path}: {reason}; {said}"


class RunOutputs:
    """The results file of a run, opened on the first record, and what the
    run could not write."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self.losses: list[OutputLoss] = []
        self._writer: ResultWriter | None = None
        self._results_lost = False
        self._records = 0

    def write(self, record: ResultRecord) -> None:
        """Persist one record; a failed write is noted, never raised."""
        self._records += 1
        writer = self._open()
        if writer is not None:
            try:
                writer.write(record)
            except OSError as exc:
                self._lose_results(exc)

    def close(self) -> bool:
        """Close the results file (creating it if no record came); whether it
        was written."""
        writer = self._open()
        for loss in self.losses:
            if loss.what == "records":
                loss.total = self._records
        if writer is None:
            return False
        writer.close()
        return True

    def holds_every_record(self) -> bool:
        """Whether the results file holds every record of the run, each whole:
        nothing about it was lost (a failed write, a failed rewrite)."""
        return not any(loss.path == self.results for loss in self.losses)

    def lost(self, path: Path | None, what: str, exc: OSError) -> None:
        self.losses.append(OutputLoss(path or Path("?"), what, exc))

    def _open(self) -> ResultWriter | None:
        if self._writer is None and not self._results_lost:
            from .results.store import ResultWriter

            try:
                self._writer = ResultWriter(self.results)
            except OSError as exc:
                self._lose_results(exc)
        return self._writer

    def _lose_results(self, exc: OSError) -> None:
        written = self._writer.written if self._writer is not None else 0
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._results_lost = True
        self.losses.append(OutputLoss(self.results, "records", exc, written))
