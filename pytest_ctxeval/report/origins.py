"""Which run each item of a report came from, when a partial rerun kept
items of earlier runs (see history/partial.py)."""

from __future__ import annotations

from collections.abc import Iterable

from ..results.record import ResultRecord


def current_run(records: Iterable[ResultRecord], run_id: str = "") -> str:
    """The report's own run: ``run_id`` when given, else the records' latest
    (a report re-rendered from a merged results file)."""
    if run_id:
        return run_id
    latest = max(((r.started_at, r.run_id) for r in records if r.run_id), default=("", ""))
    return latest[1]


def origin(record: ResultRecord, current: str) -> str:
    """ "from run <id> (<date>)" for an item of an earlier run, else ""."""
    if not record.run_id or not current or record.run_id == current:
        return ""
    date = record.started_at.replace("T", " ").removesuffix("+00:00")
    return f"from run {record.run_id}" + (f" ({date} UTC)" if date else "")
