"""Two runs side by side (``ctxeval compare``), decided as the gate decides:
the earlier run plays the baseline, and each item's outcome pair is the cell
of the gate's table (gate.table), through the gate's own comparison
(gate.compare), renamed probes matched by content included."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..gate.baseline import Key, baseline_from_records, record_key
from ..gate.compare import Comparison, compare, decision, entry_outcome, record_outcome
from ..gate.table import LEGEND
from ..results.record import ResultRecord
from .store import counts

# The page's sections, in order: what moved first.
WORSE, BETTER, NOTE, SAME, NEW, GONE = "worse", "better", "note", "same", "new", "gone"


@dataclass
class Side:
    """One run as the page shows it."""

    label: str  # the run id or the file it was read from
    records: list[ResultRecord]

    def header(self) -> dict[str, Any]:
        records = self.records
        return {
            "run": self.label,
            "started": min((r.started_at for r in records if r.started_at), default="—"),
            "commit": _joined(r.git_commit for r in records),
            "model": _joined(r.model for r in records),
            "strategies": _joined(r.strategy for r in records),
            **counts(records),
        }


@dataclass
class Row:
    key: Key
    before: ResultRecord | None
    after: ResultRecord | None
    symbol: str  # the gate table's cell
    why: str
    change: str  # WORSE, BETTER, ...

    @property
    def decision(self) -> str:
        return LEGEND[self.symbol][0] if self.symbol in LEGEND else self.symbol

    def cells(self, record: ResultRecord | None) -> dict[str, Any]:
        if record is None:
            return {"outcome": "absent", "answer": None, "window": None, "cost": None}
        return {
            "outcome": record_outcome(record).shown(),
            "answer": record.answer if record.error is None else f"error: {record.error}",
            "window": record.prompt_tokens,
            "cost": record.cost_usd,
        }


@dataclass
class RunComparison:
    a: Side
    b: Side
    comparison: Comparison
    rows: list[Row] = field(default_factory=list)

    def section(self, change: str) -> list[Row]:
        return [row for row in self.rows if row.change == change]


def compare_runs(a: Side, b: Side) -> RunComparison:
    """Run ``b`` against run ``a``, item by item."""
    baseline = baseline_from_records(a.records)
    known = baseline.by_key()
    before_records = {record_key(r): r for r in a.records}
    # Every probe of ``a`` the second run lacks counts as gone from it.
    comparison = compare(b.records, baseline)
    regressed = {c.key: c for c in comparison.regressions}
    improved = {c.key: c for c in comparison.improvements}
    noted = {c.key: c for c in comparison.notes}
    was_of = {new: old for old, new in comparison.renamed.items()}
    result = RunComparison(a, b, comparison)
    for record in sorted(b.records, key=record_key):
        key = record_key(record)
        old_key = was_of.get(key, key)
        entry = known.get(old_key)
        cell = decision(entry, record)
        if key in regressed:
            change, why = WORSE, regressed[key].why
        elif key in improved:
            change, why = BETTER, improved[key].why
        elif key in noted:
            change, why = NOTE, noted[key].why
        elif entry is None:
            change, why = NEW, cell.why
        else:
            change, why = SAME, cell.why
        result.rows.append(Row(key, before_records.get(old_key), record, cell.symbol, why, change))
    for key in comparison.removed:
        entry = known[key]
        why = f"not in the second run (was {entry_outcome(entry).shown()})"
        result.rows.append(Row(key, before_records.get(key), None, "-", why, GONE))
    return result


def _joined(values: Any) -> str:
    return ", ".join(sorted({str(v) for v in values if v})) or "—"
