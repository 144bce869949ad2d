"""The report's summary table, cell by cell: columns that are zero for every
strategy are left out (and named in a note), costs under a mock model read
"n/a (mock model)", and a strategy whose every item errored reads "not
measured" for what it never measured."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from ..results.record import CLASSIFICATIONS, ResultRecord
from .formats import MOCK_COST, NOT_MEASURED, is_mock_model, percent, thousands, undefined, usd


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    title: str = ""
    show: Callable[[Any], str] = str
    cost: bool = False  # meaningless under a mock model
    measure: bool = True  # an errored item never got it


COLUMNS = (
    *(Column(c, c, measure=False) for c in CLASSIFICATIONS),
    Column(
        "cumulative_input_tokens",
        "input tokens",
        "each simulated session once, plus every request of every probe",
        thousands,
    ),
    Column("mean_prompt_tokens", "mean prompt tokens", show=thousands),
    Column("tokens_saved_vs_full", "saved vs full", show=percent),
    Column(
        "cache_hit_ratio",
        "cache hit",
        "cached / input tokens over every request of the sessions",
        percent,
    ),
    Column("cost_usd", "cost", show=usd, cost=True),
    Column(
        "cost_per_task_usd",
        "cost per task",
        "a scenario's session once, plus its probes",
        usd,
        True,
    ),
    Column("memory_retrievals", "memory retrievals"),
)


def _zero(value: Any) -> bool:
    return undefined(value) or value == 0


def summary_table(
    summary: Sequence[Mapping[Any, Any]], records: list[ResultRecord], model: str = ""
) -> dict[str, Any]:
    """``summary``: ``strategy_summary``'s rows, each with its ``strategy``.
    ``model``: the run's model, when the records do not say it."""
    models = {r.model for r in records if r.model} or {model}
    mock = all(is_mock_model(m) for m in models if m) and any(models)
    errored = {
        row["strategy"]
        for row in summary
        if all(r.classification == "error" for r in records if r.strategy == row["strategy"])
    }
    columns, hidden = [], []
    for column in COLUMNS:
        if column.cost and mock:
            columns.append(column)  # said to be n/a, not hidden
        elif all(_zero(row[column.key]) for row in summary):
            hidden.append(column.header)
        else:
            columns.append(column)
    rows = []
    for row in summary:
        cells = []
        for column in columns:
            cells.append(_cell(row, column, mock=mock, errored=row["strategy"] in errored))
        rows.append(
            {
                "strategy": row["strategy"],
                "items": row["items"],
                "passed": row["passed"],
                "cells": cells,
            }
        )
    return {"columns": columns, "rows": rows, "hidden": hidden, "mock": mock}


def _cell(row: Mapping[str, Any], column: Column, *, mock: bool, errored: bool) -> dict[str, str]:
    value = row[column.key]
    if column.cost and mock:
        return {"text": MOCK_COST, "cls": "num na"}
    if column.measure and errored:
        return {"text": NOT_MEASURED, "cls": "num na"}
    if column.key in CLASSIFICATIONS:
        if value == 0:
            return {"text": "0", "cls": "num zero"}
        query = urlencode({"strategy": row["strategy"], "classification": column.key})
        css = "num" if column.key in ("ok", "rescued") else f"num {column.key}"
        return {"text": str(value), "cls": css, "href": f"#items?{query}"}
    return {"text": column.show(value), "cls": "num"}
