"""The report's charts, as inline SVG built from the records' pandas frame.

Each function returns empty markup when its data is absent, and the template
then leaves the chart out (no empty frame).  Labels are escaped (``svg.label``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from markupsafe import Markup, escape

from ..gate.compare import Comparison
from ..results.analysis import pareto_front
from .chart_parts import Box, _grid, _legend, _place_label
from .series_legend import group_open, shown_at_first, toggle_legend
from .svg import (
    INK,
    MUTED,
    Scale,
    axis_range,
    colours,
    label,
    rate_colour,
    svg_open,
    thousands,
)

# A log axis once the largest value is this many times the smallest.
LOG_RATIO = 20


def tokens_chart(tokens: dict[str, int]) -> Markup:
    """Horizontal bar chart of cumulative input tokens per strategy."""
    if not tokens:
        return Markup("")
    label_w, bar_w, value_w, row_h, pad = 170, 420, 110, 26, 8
    width = label_w + bar_w + value_w
    height = pad * 2 + row_h * len(tokens)
    top = max(tokens.values()) or 1  # all-zero runs still draw (empty) bars
    parts = [svg_open(width, height, "Cumulative input tokens per strategy")]
    for i, (name, value) in enumerate(tokens.items()):
        y = pad + i * row_h
        w = bar_w * value / top
        parts.append(
            f"<g><title>{escape(name)}: {value:,} tokens</title>"
            f'<text x="{label_w - 8}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="middle">{label(name, 22)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" '
            'rx="2"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + row_h / 2}" '
            f'dominant-baseline="middle" class="value">{value:,}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def pareto_chart(table: pd.DataFrame) -> Markup:
    """Pass rate against cumulative input tokens, one point per strategy, the
    Pareto front drawn through the strategies worth choosing.

    ``table``: ``results.analysis.strategy_table``, whose numbers (repeats
    counted as pass rates, each session's tokens once) and whose
    ``pareto_front`` the chart shows."""
    table = table[table["items"] > 0]
    if table.empty:
        return Markup("")
    on_front = {str(name) for name in pareto_front(table).index}
    points = [
        (str(name), int(row["cumulative_input_tokens"]), float(row["pass_rate"]), int(row["items"]))
        for name, row in table.iterrows()
    ]
    width, height = 720, 360
    left, right, top, bottom = 58, 150, 16, 48
    values = [float(tokens) for _, tokens, _, _ in points]
    positive = [v for v in values if v > 0]
    log = bool(positive) and min(positive) * LOG_RATIO <= max(positive) and 0 not in values
    low, high = axis_range(values, log=log)
    x = Scale(low, high, left, width - right, log=log)
    y = Scale(0.0, 1.0, height - bottom, top)
    parts = [svg_open(width, height, "Pass rate against cumulative input tokens per strategy")]
    parts += _grid(x, y, width - right, left, height - bottom, top, percent_y=True)
    axis = "cumulative input tokens" + (" (log scale)" if log else "")
    parts.append(
        f'<text class="axis" x="{(left + width - right) / 2}" y="{height - 10}" '
        f'text-anchor="middle">{axis}</text>'
        f'<text class="axis" transform="translate(14 {(top + height - bottom) / 2}) rotate(-90)" '
        f'text-anchor="middle">pass rate</text>'
    )
    front = sorted((p for p in points if p[0] in on_front), key=lambda p: p[1])
    if len(front) > 1:
        line = " ".join(f"{x(tokens):.1f},{y(rate):.1f}" for _, tokens, rate, _ in front)
        parts.append(f'<polyline class="front" points="{line}"/>')
    # Labels keep off every point, and off each other.
    placed: list[Box] = [(x(t) - 6, y(r) - 6, x(t) + 6, y(r) + 6) for _, t, r, _ in points]
    for name, tokens, rate, items in sorted(points, key=lambda p: (-p[2], p[1])):
        px, py = x(tokens), y(rate)
        lx, ly, anchor = _place_label(px, py, min(len(name), 20), placed)
        best = name in on_front
        parts.append(
            f'<g class="point{" front" if best else ""}"><title>{escape(name)}: pass rate '
            f"{rate:.0%} over {items} items, {tokens:,} input tokens</title>"
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{6 if best else 4.5}"/>'
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{label(name, 20)}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class SeriesChart:
    """One scenario's prompt tokens per model call, one line per strategy."""

    scenario: str
    calls: int
    svg: Markup


def prompt_series_charts(df: pd.DataFrame) -> list[SeriesChart]:
    """Per scenario (longest session first): the prompt tokens of every model
    call of the simulated session, then of the probe, per strategy, ``full``
    in ink; dotted in the same colour, the tokens the provider's prompt cache
    would serve of each call.  Scenarios with fewer than two calls are left out."""
    if df.empty or "session_prompt_tokens" not in df:
        return []
    first = df.drop_duplicates(["scenario", "strategy", "budget"])
    names = sorted(first["strategy"].astype(str).unique())
    palette = colours(names)
    # Plain rows, grouped here: pandas' per-group work would cost more than
    # the charts on a run of many short scenarios.
    ordered = first.sort_values(["scenario", "strategy"], kind="stable")
    by_scenario: dict[Any, list[Mapping[Any, Any]]] = {}
    columns = [c for c in _SERIES_COLUMNS if c in ordered.columns]
    for record in ordered[columns].to_dict("records"):
        by_scenario.setdefault(record["scenario"], []).append(record)
    charts = []
    for scenario, rows in by_scenario.items():
        series: dict[str, list[int]] = {}
        cached: dict[str, list[int]] = {}
        for row in rows:
            tokens = [*list(row["session_prompt_tokens"] or []), int(row["prompt_tokens"])]
            if not row["session_prompt_tokens"] or not row["prompt_tokens"]:
                continue
            name = str(row["strategy"])
            if not pd.isna(row["budget"]):
                name += f" @ {int(row['budget']):,}"
            series[name] = tokens
            cached[name] = _cached_series(row, len(tokens))
        calls = max((len(s) for s in series.values()), default=0)
        if calls >= 2:
            svg = _series_svg(series, palette, cached)
            charts.append(SeriesChart(str(scenario), calls, svg))
    return sorted(charts, key=lambda c: (-c.calls, c.scenario))


_SERIES_COLUMNS = [
    "scenario",
    "strategy",
    "budget",
    "session_prompt_tokens",
    "prompt_tokens",
    "session_requests",
    "probe_cached_tokens",
]


def _cached_series(row: Mapping[Any, Any], calls: int) -> list[int]:
    """Cached tokens per call (the probe's last); empty when nothing was cached."""
    per_request = row.get("session_requests")
    values = list((per_request or {}).get("cached_tokens") or [])
    probe = row.get("probe_cached_tokens")
    values.append(int(probe) if isinstance(probe, (int, float)) and probe == probe else 0)
    return values if any(values) and len(values) == calls else []


def _series_svg(
    series: dict[str, list[int]],
    palette: dict[str, str],
    cached: dict[str, list[int]] | None = None,
) -> Markup:
    width, height = 720, 300
    left, right, top, bottom = 58, 16, 14, 40
    calls = max(len(s) for s in series.values())
    x = Scale(1, calls, left, width - right)
    low, high = axis_range([v for s in series.values() for v in s], log=False)
    y = Scale(low, high, height - bottom, top)
    parts = [svg_open(width, height, "Prompt tokens per model call, per strategy")]
    parts += _grid(x, y, width - right, left, height - bottom, top)
    parts.append(
        f'<text class="axis" x="{(left + width - right) / 2}" y="{height - 6}" '
        'text-anchor="middle">model call (the last is the probe)</text>'
    )
    shown = shown_at_first(series)
    at_call = [f"{px:.1f}" for px in x.many(range(1, calls + 1))]  # the same for every line
    # full last, so its line is on top.
    for name in sorted(series, key=lambda n: n == "full"):
        parts.append(group_open(name, name in shown))
        values = series[name]
        colour = palette.get(name.split(" @ ")[0], MUTED)
        # A line may have fewer calls than the scenario's longest.
        placed = zip(at_call, y.many(values), strict=False)
        line = " ".join(f"{px},{py:.1f}" for px, py in placed)
        css = "series full" if name == "full" else "series"
        parts.append(
            f'<polyline class="{css}" stroke="{colour}" points="{line}">'
            f"<title>{escape(name)}: {values[-1]:,} tokens at the probe</title></polyline>"
        )
        hits = (cached or {}).get(name)
        if hits:
            placed = zip(at_call, y.many(hits), strict=False)  # one per call of this line
            dots = " ".join(f"{px},{py:.1f}" for px, py in placed)
            share = sum(hits) / (sum(values) or 1)
            parts.append(
                f'<polyline class="series cached" stroke="{colour}" stroke-dasharray="2 3" '
                f'points="{dots}"><title>{escape(name)}: cached tokens per call '
                f"({share:.0%} of its input)</title></polyline>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    legend = toggle_legend(list(series), lambda n: palette.get(n.split(" @ ")[0], MUTED), shown)
    return Markup("".join(parts) + legend)


def depth_heatmaps(df: pd.DataFrame) -> Markup:
    """Per strategy, the pass rate of needle probes by needle depth (rows) and
    session length in messages (columns)."""
    if df.empty or "needle_depth" not in df:
        return Markup("")
    needles = df[df["needle_depth"].notna() & df["verdict"].isin(["pass", "fail"])]
    if needles.empty or needles["needle_depth"].nunique() * needles["turns"].nunique() < 2:
        return Markup("")
    cells = (
        needles.assign(_pass=needles["verdict"].eq("pass"))
        .groupby(["strategy", "needle_depth", "turns"])["_pass"]
        .agg(["sum", "size"])
    )
    counts: dict[str, dict[tuple[float, int], tuple[int, int]]] = {}
    for (strategy, depth, length), passed, size in cells.itertuples(name=None):
        counts.setdefault(str(strategy), {})[(float(depth), int(length))] = (int(passed), int(size))
    depths = sorted(float(d) for d in needles["needle_depth"].unique())
    lengths = sorted(int(t) for t in needles["turns"].unique())
    figures = [_heatmap(name, counts[name], depths, lengths) for name in sorted(counts)]
    return Markup('<div class="heatmaps">' + "".join(figures) + "</div>")


def _heatmap(
    strategy: str,
    cells: dict[tuple[float, int], tuple[int, int]],
    depths: list[float],
    lengths: list[int],
) -> str:
    cell_w, cell_h, left, top = 54, 28, 46, 8
    width = left + cell_w * len(lengths) + 4
    height = top + cell_h * len(depths) + 34
    parts = [
        "<figure>",
        f"<figcaption>{escape(strategy)}</figcaption>",
        svg_open(width, height, f"Pass rate by needle depth and session length: {strategy}"),
    ]
    for row, depth in enumerate(depths):
        y = top + row * cell_h
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{y + cell_h / 2}" text-anchor="end" '
            f'dominant-baseline="middle">{depth:.0%}</text>'
        )
        for col, length in enumerate(lengths):
            x = left + col * cell_w
            if (depth, length) not in cells:
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                    f'fill="#f4f6f8"/>'
                )
                continue
            passed, size = cells[(depth, length)]
            rate = passed / size
            parts.append(
                f"<g><title>depth {depth:.0%}, {length} messages: passed {passed}/{size}</title>"
                f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" rx="2" '
                f'fill="{rate_colour(rate)}"/>'
                f'<text x="{x + (cell_w - 2) / 2}" y="{y + cell_h / 2}" text-anchor="middle" '
                f'dominant-baseline="middle" fill="{INK}">{passed}/{size}</text></g>'
            )
    base = top + cell_h * len(depths)
    for col, length in enumerate(lengths):
        middle = left + col * cell_w + (cell_w - 2) / 2
        parts.append(
            f'<text class="tick" x="{middle}" y="{base + 12}" text-anchor="middle">{length}</text>'
        )
    parts.append(
        f'<text class="axis" x="{left + cell_w * len(lengths) / 2}" y="{base + 28}" '
        'text-anchor="middle">messages</text></svg></figure>'
    )
    return "".join(parts)


def baseline_chart(comparison: Comparison | None) -> Markup:
    """Per strategy, probes that regressed (left, red) and improved (right,
    green) against the baseline."""
    if comparison is None:
        return Markup("")
    worse = pd.Series([c.key[2] for c in comparison.regressions], dtype=object).value_counts()
    better = pd.Series([c.key[2] for c in comparison.improvements], dtype=object).value_counts()
    names = sorted(set(worse.index) | set(better.index))
    if not names:
        return Markup("")
    label_w, half, row_h, pad = 170, 250, 26, 8
    width = label_w + half * 2 + 20
    height = pad * 2 + row_h * len(names) + 18
    top = max(int(worse.max()) if len(worse) else 0, int(better.max()) if len(better) else 0)
    middle = label_w + half
    parts = [svg_open(width, height, "Probes that regressed or improved, per strategy")]
    parts.append(
        f'<line x1="{middle}" x2="{middle}" y1="{pad}" y2="{height - 18}" stroke="{MUTED}"/>'
        f'<text class="tick" x="{middle - 6}" y="{height - 4}" text-anchor="end">'
        "← regressed</text>"
        f'<text class="tick" x="{middle + 6}" y="{height - 4}">improved →</text>'
    )
    for i, name in enumerate(names):
        y = pad + i * row_h
        lost, gained = int(worse.get(name, 0)), int(better.get(name, 0))
        w_lost, w_gained = half * lost / top, half * gained / top
        parts.append(
            f"<g><title>{escape(name)}: {lost} regressed, {gained} improved</title>"
            f'<text x="{label_w - 8}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="middle">{label(name, 22)}</text>'
            f'<rect class="worse" x="{middle - w_lost:.1f}" y="{y + 4}" width="{w_lost:.1f}" '
            f'height="{row_h - 8}"/>'
            f'<rect class="better" x="{middle}" y="{y + 4}" width="{w_gained:.1f}" '
            f'height="{row_h - 8}"/>'
        )
        if lost:
            parts.append(
                f'<text class="value" x="{middle - w_lost - 4:.1f}" y="{y + row_h / 2}" '
                f'text-anchor="end" dominant-baseline="middle">{thousands(lost)}</text>'
            )
        if gained:
            parts.append(
                f'<text class="value" x="{middle + w_gained + 4:.1f}" y="{y + row_h / 2}" '
                f'dominant-baseline="middle">{thousands(gained)}</text>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def rate_by_turn_chart(curves: dict[str, list[tuple[int, int, int]]], what: str) -> Markup:
    """A rate (0..1) by probe turn, one line per strategy, ``full`` in ink:
    the forgetting curve (``what`` = "pass rate") or the constraint-violation
    rate.  ``curves``: strategy -> (probe turn, hits, asks), turns ascending
    (see ``report.sweeps``).  Empty without at least two turns to join."""
    turns = sorted({t for points in curves.values() for t, _, _ in points})
    if len(turns) < 2:
        return Markup("")
    width, height = 720, 300
    left, right, top, bottom = 58, 16, 14, 40
    x = Scale(turns[0], turns[-1], left, width - right)
    y = Scale(0.0, 1.0, height - bottom, top)
    palette = colours(sorted(curves))
    parts = [svg_open(width, height, f"{what.capitalize()} by probe turn, per strategy")]
    parts += _grid(x, y, width - right, left, height - bottom, top, percent_y=True)
    parts.append(
        f'<text class="axis" x="{(left + width - right) / 2}" y="{height - 6}" '
        'text-anchor="middle">probe turn (the user turn the probe was asked as)</text>'
    )
    for name in sorted(curves, key=lambda n: n == "full"):
        points = curves[name]
        colour = palette.get(name, MUTED)
        line = " ".join(f"{x(t):.1f},{y(hits / asks):.1f}" for t, hits, asks in points)
        css = "series full" if name == "full" else "series"
        dots = "".join(
            f'<circle cx="{x(t):.1f}" cy="{y(hits / asks):.1f}" r="2.5" fill="{colour}">'
            f"<title>{escape(name)}, turn {t}: {hits}/{asks}</title></circle>"
            for t, hits, asks in points
        )
        parts.append(
            f'<g><polyline class="{css}" stroke="{colour}" points="{line}">'
            f"<title>{escape(name)}</title></polyline>{dots}</g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts) + _legend(curves, lambda n: palette.get(n, MUTED)))
