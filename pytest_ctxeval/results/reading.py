"""Reading a results file record by record: below both the store and the
frames built from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .record import ResultRecord


def iter_results(path: Path) -> Iterator[ResultRecord]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield ResultRecord.model_validate_json(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: not a result record: {exc}") from None
