"""Small helpers for charts drawn as inline SVG: scales, ticks, colours.

Every text that reaches a chart goes through ``label`` (escaped, shortened);
numbers are formatted here.  No chart library: the report loads nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Distinct on white and for the common colour blindnesses (Okabe-Ito first,
# then Tableau); ``full`` is drawn in ink, not from the palette.
PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#d55e00",
    "#56b4e9",
    "#8c6d31",
    "#7f3c8d",
    "#11a579",
    "#e73f74",
    "#3969ac",
    "#80ba5a",
)
INK = "#1c2126"
MUTED = "#5f6870"
GRID = "#e3e6e9"


def colours(names: Iterable[str]) -> dict[str, str]:
    """A colour per name, stable for a given list: ``full`` is ink."""
    out: dict[str, str] = {}
    others = [n for n in names if n != "full"]
    for i, name in enumerate(others):
        out[name] = PALETTE[i % len(PALETTE)]
    out["full"] = INK
    return out


def label(text: object, limit: int = 24) -> Markup:
    """Escaped text, shortened with an ellipsis past ``limit`` characters."""
    value = str(text)
    return escape(value if len(value) <= limit else value[: limit - 1] + "…")


def thousands(value: float) -> str:
    return f"{round(value):,}"


def compact(value: float) -> str:
    """1.2M, 340k, 950: tick labels that fit."""
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.3g}M"
    if abs(value) >= 1_000:
        return f"{value / 1_000:.3g}k"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Scale:
    """Maps data values to pixels, linearly or on a log10 axis."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            low, high = math.log10(self.low), math.log10(self.high)
            value = math.log10(max(value, self.low))
        else:
            low, high = self.low, self.high
        span = (high - low) or 1.0
        return self.start + (value - low) / span * (self.end - self.start)

    def many(self, values: Iterable[float]) -> list[float]:
        """``[self(v) for v in values]``, in one pass: a run's per-call chart
        places hundreds of thousands of points."""
        if self.log:
            return [self(v) for v in values]
        low, start, end = self.low, self.start, self.end
        span = (self.high - low) or 1.0
        return [start + (v - low) / span * (end - start) for v in values]

    def ticks(self) -> list[float]:
        if self.log:
            return log_ticks(self.low, self.high)
        return nice_ticks(self.low, self.high)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def log_ticks(low: float, high: float) -> list[float]:
    """1, 2, 5 times the powers of ten within [low, high]; powers only when many."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in (1, 2, 5):
            value = m * 10**exponent
            if low <= value <= high:
                ticks.append(float(value))
    if len(ticks) > 8:
        ticks = [t for t in ticks if math.log10(t).is_integer()]
    return ticks


def axis_range(values: Sequence[float], *, log: bool) -> tuple[float, float]:
    """A range with some room around the values (from 0 on a linear axis)."""
    if log:
        positive = [v for v in values if v > 0] or [1.0]
        return min(positive) / 1.5, max(positive) * 1.5
    top = max(values, default=0.0)
    if top <= 0:
        return 0.0, 1.0
    step = nice_ticks(0, top)[1]  # the ticks' step: the axis ends on a tick above the top
    return 0.0, math.ceil(top * 1.02 / step) * step


def rate_colour(rate: float) -> str:
    """Red at 0, amber at 0.5, green at 1: a pass-rate cell's background."""
    hue = round(max(0.0, min(1.0, rate)) * 120)
    return f"hsl({hue}, 62%, 82%)"


def svg_open(width: int, height: int, aria: str, css_class: str = "chart") -> str:
    return (
        f'<svg class="{css_class}" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{escape(aria)}">'
    )
