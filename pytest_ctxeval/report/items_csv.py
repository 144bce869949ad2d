"""The item table as CSV (``ctxeval report --csv``): the columns of the
report's item table, numbers unformatted, "not measured" where an item that
errored never got a measure."""

from __future__ import annotations

import csv
from pathlib import Path

from ..results.record import ResultRecord
from .formats import NOT_MEASURED
from .outcomes import FAIL_ON_DEFAULT, pytest_outcome

HEADER = (
    "scenario",
    "strategy",
    "probe",
    "classification",
    "pytest",
    "prompt tokens",
    "saved vs full",
    "cumulative input",
    "cost",
)


def _safe(text: str) -> str:
    """A spreadsheet would run a cell starting so as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_items_csv(path: Path, records: list[ResultRecord]) -> Path:
    records = sorted(records, key=lambda r: (r.scenario, r.strategy, r.probe, r.repeat))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(HEADER)
        for r in records:
            ids = [_safe(str(v)) for v in (r.scenario, r.strategy, r.probe, r.classification)]
            outcome = pytest_outcome(r, FAIL_ON_DEFAULT, None)
            if r.classification == "error" and not r.prompt_tokens:
                measures: list[object] = [NOT_MEASURED] * 4
            else:
                full = r.full_prompt_tokens
                saved = f"{1 - r.prompt_tokens / full:.4f}" if full else ""
                measures = [r.prompt_tokens, saved, r.cumulative_input_tokens, r.cost_usd]
            writer.writerow([*ids, outcome, *measures])
    return path
