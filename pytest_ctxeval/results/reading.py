"""Reading a results file record by record: below both the store and the
frames built from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..kept_objects import collector_paused
from .record import ResultRecord
from .shared_values import SharedValues


def iter_results(path: Path) -> Iterator[ResultRecord]:
    """The records of ``path`` in order; equal values that a session's
    records repeat (its fact ledger, its per-request series) are one object,
    as in the run that wrote them.  ValueError names the line that is not a
    record."""
    shared = SharedValues()
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = ResultRecord.model_validate_json(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: not a result record: {exc}") from None
            shared.share(record)
            yield record


def read_results(path: Path) -> list[ResultRecord]:
    """All the records of ``path``, read without the cycle collector walking
    them again and again as they pile up (see kept_objects.collector_paused)."""
    with collector_paused():
        return list(iter_results(path))
