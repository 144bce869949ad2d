"""What the sweeps show, from the records alone (a report re-rendered from a
results file shows the same): the forgetting curve and the constraint-violation
rate by probe turn (``--ctx-sweep``), and per strategy the smallest budget that
still passes everything (``--ctx-budget``).

Only scored asks count (verdict pass or fail); errors and unscored items
(``uncheckable`` among them) are neither kept nor forgotten.  An item the
model fails even with the full context (``model_miss``) is not the
strategy's doing: the forgetting curve and the budget table both count it
as held (and the violation rate as no violation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..results.record import ResultRecord

SWEEP_MARK = "@turn-"
# Sparkline levels for the terminal's compact curve, lowest to highest.
_LEVELS = "▁▂▃▄▅▆▇█"
# The terminal curve shows at most this many probe turns; more are pooled.
MAX_TERMINAL_POINTS = 24
# The Markdown tables show at most this many columns of probe turns.
MAX_MARKDOWN_POINTS = 12


@dataclass(frozen=True)
class RatePoint:
    """At one probe turn: how many scored asks counted (``hits``) of ``total``."""

    turn: int
    hits: int
    total: int

    @property
    def rate(self) -> float:
        return self.hits / self.total


Curves = dict[str, list[RatePoint]]  # strategy -> points by probe turn, ascending


def swept(records: list[ResultRecord]) -> bool:
    """Whether the run asked probes at sweep points (``--ctx-sweep``)."""
    return any(SWEEP_MARK in r.probe for r in records)


def forgetting_curves(records: list[ResultRecord]) -> Curves:
    """Per strategy, the pass rate by the turn the probe was asked as."""
    if not swept(records):
        return {}
    return _curves(records, held)


def violation_curves(records: list[ResultRecord]) -> Curves:
    """Per strategy, among probes that check a constraint, the share that
    broke it (failed), by probe turn."""
    if not swept(records):
        return {}
    checks = [r for r in records if r.constraint is not None]
    return _curves(checks, lambda r: not held(r))


def held(record: ResultRecord) -> bool:
    """A scored item the strategy did not lose: it passed, or the model fails
    it even with the full context."""
    return record.verdict == "pass" or record.classification == "model_miss"


def _curves(records: list[ResultRecord], counts: Callable[[ResultRecord], bool]) -> Curves:
    tally: dict[str, dict[int, list[int]]] = {}
    for record in records:
        if record.verdict not in ("pass", "fail") or record.probe_turn is None:
            continue
        cell = tally.setdefault(record.strategy, {}).setdefault(record.probe_turn, [0, 0])
        cell[0] += counts(record)
        cell[1] += 1
    return {
        strategy: [RatePoint(t, hits, total) for t, (hits, total) in sorted(turns.items())]
        for strategy, turns in sorted(tally.items())
    }


@dataclass
class BudgetRow:
    """One strategy under --ctx-budget: its pass rate at each budget."""

    strategy: str
    # budget -> (passed, scored); passed counts an item the model fails even
    # with the full context (model_miss) as held: it is not the strategy's doing.
    by_budget: dict[int, tuple[int, int]] = field(default_factory=dict)
    # budget -> items at that budget, scored or not.
    items: dict[int, int] = field(default_factory=dict)

    @property
    def smallest_passing(self) -> int | None:
        """The smallest budget at which every item held; None if none did."""
        for budget in sorted(self.by_budget):
            passed, scored = self.by_budget[budget]
            if scored and passed == scored == self.items[budget]:
                return budget
        return None


def budget_rows(records: list[ResultRecord]) -> list[BudgetRow]:
    """Per budgeted strategy (its name without the budget), by budget."""
    from ..budgets import without_budget_name

    rows: dict[str, BudgetRow] = {}
    for record in records:
        if record.budget is None:
            continue
        name = without_budget_name(record.strategy)
        row = rows.setdefault(name, BudgetRow(name))
        if record.classification == "uncheckable":
            continue  # no verdict to hold or lose at any budget
        row.items[record.budget] = row.items.get(record.budget, 0) + 1
        passed, scored = row.by_budget.get(record.budget, (0, 0))
        if record.verdict in ("pass", "fail"):
            row.by_budget[record.budget] = (passed + held(record), scored + 1)
        else:
            row.by_budget[record.budget] = (passed, scored)
    return [rows[name] for name in sorted(rows)]


def smallest_text(row: BudgetRow) -> str:
    budget = row.smallest_passing
    return f"{budget:,}" if budget is not None else "none of the budgets"


def sparkline(points: list[RatePoint]) -> str:
    """One character per probe turn (pooled to at most MAX_TERMINAL_POINTS)."""
    pooled = _pooled(points, MAX_TERMINAL_POINTS)
    return "".join(_LEVELS[round(p.rate * (len(_LEVELS) - 1))] for p in pooled)


def _pooled(points: list[RatePoint], most: int) -> list[RatePoint]:
    """Neighbouring turns pooled into ``most`` points at most (each named by its first turn)."""
    if len(points) <= most:
        return points
    size = -(-len(points) // most)
    groups = [points[i : i + size] for i in range(0, len(points), size)]
    return [RatePoint(g[0].turn, sum(p.hits for p in g), sum(p.total for p in g)) for g in groups]


def sweep_summary_lines(
    records: list[ResultRecord], *, budget_note: str | None = None
) -> list[str]:
    """The terminal's sweep lines: the compact forgetting curve and violation
    rate per strategy, then the budget table; nothing without sweeps."""
    lines: list[str] = []
    lines += _curve_lines("forgetting curve: pass rate by probe turn", forgetting_curves(records))
    lines += _curve_lines(
        "constraint violations: violation rate by probe turn", violation_curves(records)
    )
    rows = budget_rows(records)
    if rows:
        budgets = sorted({b for row in rows for b in row.items})
        lines.append("budgets: smallest that passes everything; pass rate per budget")
        width = max(len(row.strategy) for row in rows)
        for row in rows:
            rates = "  ".join(f"{b:,}: {_fraction(row.by_budget.get(b))}" for b in budgets)
            lines.append(f"{row.strategy:<{width}}  smallest {smallest_text(row)}  {rates}")
    if budget_note:
        lines.append(budget_note)
    return lines


def _curve_lines(title: str, curves: Curves) -> list[str]:
    if not curves:
        return []
    lines = [title]
    width = max(len(name) for name in curves)
    for name, points in curves.items():
        first, last = points[0], points[-1]
        lines.append(
            f"{name:<{width}}  turn {first.turn} {first.rate:>4.0%} {sparkline(points)} "
            f"turn {last.turn} {last.rate:.0%}"
        )
    return lines


def _fraction(cell: tuple[int, int] | None) -> str:
    if not cell or not cell[1]:
        return "—"
    return f"{cell[0]}/{cell[1]}"


def sweep_markdown_lines(records: list[ResultRecord]) -> list[str]:
    """The Markdown summary's sweep sections (tables); nothing without sweeps."""
    lines: list[str] = []
    for title, curves in (
        ("Forgetting curve (pass rate by probe turn)", forgetting_curves(records)),
        ("Constraint violations (violation rate by probe turn)", violation_curves(records)),
    ):
        if not curves:
            continue
        turns = sorted(
            {p.turn for points in curves.values() for p in _pooled(points, MAX_MARKDOWN_POINTS)}
        )
        lines += ["", f"### {title}", ""]
        lines.append("| strategy | " + " | ".join(f"turn {t}" for t in turns) + " |")
        lines.append("|---|" + "---:|" * len(turns))
        for name, points in curves.items():
            at = {p.turn: p for p in _pooled(points, MAX_MARKDOWN_POINTS)}
            cells = [f"{at[t].rate:.0%}" if t in at else "—" for t in turns]
            lines.append(f"| {_cell(name)} | " + " | ".join(cells) + " |")
    rows = budget_rows(records)
    if rows:
        budgets = sorted({b for row in rows for b in row.items})
        lines += ["", "### Budgets", ""]
        header = " | ".join(f"{b:,}" for b in budgets)
        lines.append(f"| strategy | smallest that passes everything | {header} |")
        lines.append("|---|---:|" + "---:|" * len(budgets))
        for row in rows:
            rates = " | ".join(_fraction(row.by_budget.get(b)) for b in budgets)
            lines.append(f"| {_cell(row.strategy)} | {smallest_text(row)} | {rates} |")
    return lines


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def sweep_context(records: list[ResultRecord]) -> dict[str, Any]:
    """The report template's sweep values: the two charts and the budget table."""
    from .charts import rate_by_turn_chart

    def plain(curves: Curves) -> dict[str, list[tuple[int, int, int]]]:
        return {
            name: [(p.turn, p.hits, p.total) for p in points] for name, points in curves.items()
        }

    rows = budget_rows(records)
    budgets = sorted({b for row in rows for b in row.items})
    return {
        "forgetting": rate_by_turn_chart(plain(forgetting_curves(records)), "pass rate"),
        "violations": rate_by_turn_chart(plain(violation_curves(records)), "violation rate"),
        "budget_columns": budgets,
        "budget_rows": [
            {
                "strategy": row.strategy,
                "smallest": smallest_text(row),
                "cells": [_fraction(row.by_budget.get(b)) for b in budgets],
            }
            for row in rows
        ],
    }
