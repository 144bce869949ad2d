"""Self-contained HTML report: one file, inline CSS, SVG and script, nothing
loaded from anywhere.

Every piece of scenario and model text reaches the page through jinja2
autoescaping, or as embedded JSON (``page_data``: the item table's rows, and
each item's drill-down packed) that the page's script only ever puts in the
page as text.  The only markup marked
safe is the SVG the chart functions build, with their labels escaped.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

from ..gate.baseline import Key, record_key
from ..gate.compare import Comparison
from ..gate.run import GateResult
from ..results.analysis import strategy_table, typed_frame
from ..results.frame import classification_matrix, records_frame, strategy_summary
from ..results.record import CLASSIFICATIONS, ResultRecord
from ..results.run_info import RunInfo
from .charts import (
    baseline_chart,
    depth_heatmaps,
    pareto_chart,
    prompt_series_charts,
    tokens_chart,
)
from .evidence import STATES, evidence_survival
from .formats import NOT_MEASURED, percent, thousands, usd
from .item_table import item_table
from .origins import current_run
from .outcomes import FAIL_ON_DEFAULT, outcome_counts, pytest_outcome
from .page_data import drilldown_chunks, page_data
from .summary_table import summary_table
from .sweeps import sweep_context

__all__ = ["render_report", "tokens_chart", "write_report"]

TEMPLATE = "report.html.j2"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    # FileSystemLoader next to this module: works from a source checkout and
    # from an installed wheel (templates are package data), with no dependency
    # on how the top-level package is laid out.
    env = Environment(
        loader=FileSystemLoader(Path(__file__).parent / "templates"),
        # Escape everything, whatever the template's name: the report is HTML only.
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(thousands=thousands, percent=percent, usd=usd)
    return env


def _joined(values: set[Any]) -> str:
    return ", ".join(sorted(str(v) for v in values if v)) or "—"


def _header(
    records: list[ResultRecord], run_info: RunInfo | Mapping[str, Any] | None
) -> dict[str, Any]:
    """The run's metadata for the header: from ``run_info`` where given, else
    from the records (a report re-rendered from a results file)."""
    started = min((r.started_at for r in records if r.started_at), default="")
    info: dict[str, Any] = {
        "model": _joined({r.model for r in records}),
        "plugin_version": _joined({r.plugin_version for r in records}),
        "git_commit": _joined({r.git_commit for r in records}),
        "started": started or "—",
        "run_id": _joined({r.run_id for r in records}),
    }
    if isinstance(run_info, RunInfo):
        info.update(
            model=run_info.model or info["model"],
            plugin_version=run_info.plugin_version,
            git_commit=run_info.git_commit or "— (not a git checkout)",
            started=run_info.started_at,
            run_id=run_info.run_id or info["run_id"],
        )
    elif run_info:
        info.update(run_info)
    info["items"] = len(records)
    info["report_written"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return info


def _strategy_params(
    records: list[ResultRecord], run_info: RunInfo | Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """Per strategy: its kind (when known) and parameters as it ran."""
    known = run_info.strategies if isinstance(run_info, RunInfo) else {}
    rows: dict[str, dict[str, Any]] = {}
    for record in records:
        row = rows.setdefault(
            record.strategy,
            {"strategy": record.strategy, "kind": "", "params": {}},
        )
        if not row["params"] and record.strategy_params:
            row["params"] = record.strategy_params
    for name, spec in known.items():
        row = rows.setdefault(name, {"strategy": name, "kind": "", "params": {}})
        row["kind"] = spec.get("kind", "")
        row["params"] = row["params"] or spec.get("params", {})
    return [rows[name] for name in sorted(rows)]


# Short cell labels keep a dozen strategies side by side on one screen; the
# full name is the cell's tooltip and the legend's.
_SHORT = {
    "context_loss": "loss",
    "model_miss": "miss",
    "divergent": "div",
    "beyond_context": "beyond",
}


def _matrix_rows(
    matrix: pd.DataFrame, regressed: Mapping[tuple[str, str], int]
) -> list[dict[str, Any]]:
    """``regressed``: per (scenario, strategy), the probes the gate found regressed."""
    rows = []
    for scenario, cells in matrix.iterrows():
        row = []
        for strategy, text in cells.items():
            # The cell text starts with the classification name; it picks the colour.
            name, _, count = (text or "").partition(" ")
            label = f"{_SHORT.get(name, name)} {count}".strip()
            worse = regressed.get((str(scenario), str(strategy)), 0)
            if worse:
                text = f"{text}; {worse} regressed against the baseline"
            row.append(
                {
                    "text": text,
                    "label": label,
                    "cls": name or "none",
                    "strategy": strategy,
                    "regressed": worse,
                }
            )
        rows.append({"scenario": scenario, "cells": row})
    return rows


# How each item stands against the baseline, for the matrix, filters and drill-down.
GATE_MARKS = ("regressed", "known loss", "improved", "new")


def gate_marks(comparison: Comparison | None, commit: str = "") -> dict[Key, tuple[str, str]]:
    """Per record key: (mark, what it means), e.g. ("regressed", "was ok in the
    baseline of 1a2b3c4: ...")."""
    if comparison is None:
        return {}
    of = f"the baseline of {commit}" if commit else "the baseline"
    marks: dict[Key, tuple[str, str]] = {}
    for change in comparison.regressions:
        marks[change.key] = ("regressed", f"was {change.before} in {of}: {change.why}")
    for change in comparison.improvements:
        marks[change.key] = ("improved", f"was {change.before} in {of}")
    for key in comparison.known_losses:
        marks.setdefault(key, ("known loss", f"a context loss in {of} too"))
    for key in comparison.new:
        marks.setdefault(key, ("new", f"not in {of}: not gated"))
    return marks


def render_report(
    records: list[ResultRecord],
    *,
    title: str = "pytest-ctxeval report",
    run_info: RunInfo | Mapping[str, Any] | None = None,
    comparison: Comparison | None = None,
    gate: GateResult | None = None,
    gated: bool = False,
    fail_on: str = FAIL_ON_DEFAULT,
) -> str:
    """The report as one HTML string.

    ``run_info``: the run's metadata (``run_info.collect_run_info``; a plain
    mapping is shown as given).  ``comparison``: the run against a baseline
    (``gate.compare.compare``), shown as its own section.  ``gated``: the
    baseline gate decided the items (also while it only wrote the baseline,
    without a comparison): only a regression or an error failed.  ``gate``:
    what the gate decided, for the header (its comparison serves when
    ``comparison`` is not given).  Otherwise
    ``fail_on``, the run's ``--ctx-fail-on``, did; the counts match pytest's."""
    with _collector_paused():
        return _render(records, title, run_info, comparison, gate, gated, fail_on)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the report is built.  A large run's
    records are millions of objects (a LoCoMo-size run's, 14 million), and
    one full collection walks all of them (8 s for that run); the report's own
    allocations set one off for nothing, as what they make lives until the
    page is written.  Loaded from that run's results file, its records took
    7.5 s to write the report from with the collector on, 2.9 s with it off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _render(
    records: list[ResultRecord],
    title: str,
    run_info: RunInfo | Mapping[str, Any] | None,
    comparison: Comparison | None,
    gate: GateResult | None,
    gated: bool,
    fail_on: str,
) -> str:
    if comparison is None and gate is not None:
        comparison = gate.comparison
    gated = gated or gate is not None
    records = sorted(records, key=lambda r: (r.scenario, r.strategy, r.probe, r.repeat))
    marks = gate_marks(comparison, gate.baseline_commit if gate is not None else "")
    regressed_cells: dict[tuple[str, str], int] = {}
    for record in records:
        if marks.get(record_key(record), ("",))[0] == "regressed":
            cell = (record.scenario, record.strategy)
            regressed_cells[cell] = regressed_cells.get(cell, 0) + 1
    df = records_frame(records)
    summary = strategy_summary(df)
    matrix = classification_matrix(df)
    regressed: set[Key] | None = None
    if comparison is not None or gated:
        regressed = comparison.regressed_keys if comparison is not None else set()
    outcomes = [pytest_outcome(r, fail_on, regressed) for r in records]
    # A partial rerun: the items kept from earlier runs say so.
    current = current_run(records, run_info.run_id if isinstance(run_info, RunInfo) else "")
    series = prompt_series_charts(df)
    summary_rows = [{"strategy": s, **row} for s, row in summary.to_dict("index").items()]
    header = _header(records, run_info)
    table = summary_table(summary_rows, records, str(header["model"]))
    rows = item_table(records, outcomes, marks, current, mock=table["mock"])
    gates = [marks.get(record_key(r)) for r in records]
    context = {
        "title": title,
        "run_info": header,
        "outcomes": outcome_counts(outcomes),
        "fail_on": fail_on,
        "gated": regressed is not None,
        "params": _strategy_params(records, run_info),
        "classifications": CLASSIFICATIONS,
        "summary": summary_rows,
        "summary_table": table,
        "not_measured": NOT_MEASURED,
        "strategies": list(matrix.columns),
        "matrix": _matrix_rows(matrix, regressed_cells),
        "gate": gate,
        "gate_marks": [m for m in GATE_MARKS if any(v[0] == m for v in marks.values())],
        "chart": tokens_chart(
            {str(k): int(v) for k, v in summary["cumulative_input_tokens"].items()}
        ),
        "pareto": pareto_chart(strategy_table(typed_frame(df))) if records else "",
        "series": series,
        "heatmaps": depth_heatmaps(df),
        **sweep_context(records),
        "comparison": comparison,
        "baseline_chart": baseline_chart(comparison),
        "item_count": len(records),
        "tags": sorted({tag for r in records for tag in r.tags}),
        "evidence": evidence_survival(records),
        "evidence_states": STATES,
        "present": [c for c in CLASSIFICATIONS if any(r.classification == c for r in records)],
        "data": page_data(rows, drilldown_chunks(records, outcomes, gates)),
        "table_script": _asset("report_table.js.j2"),
        "script": _asset("report.js.j2"),
        "extras": _asset("report_extras.js.j2"),
        "style": _asset("report.css.j2"),
    }
    return _environment().get_template(TEMPLATE).render(**context)


@lru_cache(maxsize=4)
def _asset(name: str) -> Markup:
    """A script or style sheet of ours, put in the page as is."""
    return Markup((Path(__file__).parent / "templates" / name).read_text(encoding="utf-8"))


def write_report(path: str | Path, records: list[ResultRecord], **kw: Any) -> Path:
    """Render the report to ``path``, creating parent directories."""
    from ..safe_files import replace_text

    path = Path(path)
    replace_text(path, render_report(records, **kw))
    return path
