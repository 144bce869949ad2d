"""Self-contained HTML report: one file, inline CSS and SVG, no external resources.

Every piece of scenario and model text reaches the page through jinja2
autoescaping. The only markup marked safe is the SVG chart built below, whose
labels are escaped with ``markupsafe.escape`` before they are put in it.
"""

from __future__ import annotations

import difflib
import json
import math
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup, escape

from ..results.frame import classification_matrix, records_frame, strategy_summary
from ..results.record import CLASSIFICATIONS, ResultRecord

TEMPLATE = "report.html.j2"
PASSING = frozenset({"ok", "rescued"})


def _thousands(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{round(value):,}"


def _percent(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value * 100:.1f} %"


def _usd(value: Any) -> str:
    return f"${value:,.4f}"


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
    env.filters.update(thousands=_thousands, percent=_percent, usd=_usd)
    return env


def tokens_chart(tokens: dict[str, int]) -> Markup:
    """Horizontal bar chart of cumulative input tokens per strategy, as inline SVG."""
    if not tokens:
        return Markup("")
    label_w, bar_w, value_w, row_h, pad = 170, 420, 110, 26, 8
    width = label_w + bar_w + value_w
    height = pad * 2 + row_h * len(tokens)
    top = max(tokens.values()) or 1  # all-zero runs still draw (empty) bars
    parts = [
        f'<svg class="chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="Cumulative input tokens per strategy">'
    ]
    for i, (name, value) in enumerate(tokens.items()):
        y = pad + i * row_h
        w = bar_w * value / top
        label = escape(name if len(name) <= 22 else name[:21] + "…")
        parts.append(
            f"<g><title>{escape(name)}: {value:,} tokens</title>"
            f'<text x="{label_w - 8}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="middle">{label}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" rx="2"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + row_h / 2}" '
            f'dominant-baseline="middle" class="value">{value:,}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _diff(answer: str | None, truth: str | None) -> str:
    if answer is None or truth is None or answer == truth:
        return ""
    lines = difflib.unified_diff(
        truth.splitlines(), answer.splitlines(), "full context", "strategy", lineterm=""
    )
    return "\n".join(lines)


def _failure(record: ResultRecord) -> dict[str, Any]:
    return {
        "record": record,
        "expected": _pretty(record.expected) if record.expected is not None else None,
        # A divergent probe is reported with its diff to the full context.
        "diff": _diff(record.answer, record.ground_truth_answer)
        if record.classification == "divergent"
        else "",
    }


def _run_info(records: list[ResultRecord], extra: dict | None) -> dict[str, Any]:
    def joined(values: set[str]) -> str:
        return ", ".join(sorted(v for v in values if v)) or "—"

    info: dict[str, Any] = {
        "model": joined({r.model for r in records}),
        "run_id": joined({r.run_id for r in records}),
        "items": len(records),
        "time": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    info.update(extra or {})
    return info


# Short cell labels keep a dozen strategies side by side on one screen; the
# full name is the cell's tooltip and the legend's.
_SHORT = {
    "context_loss": "loss",
    "model_miss": "miss",
    "divergent": "div",
    "beyond_context": "beyond",
}


def _matrix_rows(matrix: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for scenario, cells in matrix.iterrows():
        row = []
        for text in cells:
            # The cell text starts with the classification name; it picks the colour.
            name, _, count = (text or "").partition(" ")
            label = f"{_SHORT.get(name, name)} {count}".strip()
            row.append({"text": text, "label": label, "cls": name or "none"})
        rows.append({"scenario": scenario, "cells": row})
    return rows


def render_report(
    records: list[ResultRecord],
    *,
    title: str = "pytest-ctxeval report",
    run_info: dict | None = None,
) -> str:
    """The report as one HTML string."""
    df = records_frame(records)
    summary = strategy_summary(df)
    matrix = classification_matrix(df)
    failures = sorted(
        (r for r in records if r.classification not in PASSING),
        key=lambda r: (r.scenario, r.strategy, r.probe, r.repeat),
    )
    context = {
        "title": title,
        "run_info": _run_info(records, run_info),
        "classifications": CLASSIFICATIONS,
        "summary": [{"strategy": s, **row} for s, row in summary.to_dict("index").items()],
        "strategies": list(matrix.columns),
        "matrix": _matrix_rows(matrix),
        "chart": tokens_chart(
            {str(k): int(v) for k, v in summary["cumulative_input_tokens"].items()}
        ),
        "failures": [_failure(r) for r in failures],
    }
    return _environment().get_template(TEMPLATE).render(**context)


def write_report(path: str | Path, records: list[ResultRecord], **kw: Any) -> Path:
    """Render the report to ``path``, creating parent directories."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(records, **kw), encoding="utf-8")
    return path
