"""What several of the report's charts draw alike: point labels that do not
overlap, legends and grids."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from markupsafe import escape

from .svg import GRID, Scale, compact

Box = tuple[float, float, float, float]  # left, top, right, bottom
CHAR_W, LINE_H = 6.6, 13


def _place_label(px: float, py: float, chars: int, placed: list[Box]) -> tuple[float, float, str]:
    """Where a point's label goes: right of it, else left, above or below,
    else further down until it clears the labels already placed."""
    width = chars * CHAR_W
    candidates = [
        (px + 9, py + 4, "start"),
        (px - 9, py + 4, "end"),
        (px + 6, py - 9, "start"),
        (px + 6, py + 17, "start"),
    ]
    for step in range(1, 12):
        candidates.append((px + 9, py + 4 + step * LINE_H, "start"))
    for lx, ly, anchor in candidates:
        left = lx if anchor == "start" else lx - width
        box = (left, ly - LINE_H + 3, left + width, ly + 3)
        if not any(_overlap(box, other) for other in placed):
            placed.append(box)
            return lx, ly, anchor
    return px + 9, py + 4, "start"


def _legend(names: Iterable[str], colour: Callable[[str], str]) -> str:
    """A chart's legend: a swatch and the name of each series, sorted by name."""
    items = "".join(
        f'<li><span class="swatch" style="background:{colour(n)}"></span>{escape(n)}</li>'
        for n in sorted(names)
    )
    return f'<ul class="chart-legend">{items}</ul>'


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _grid(
    x: Scale,
    y: Scale,
    right: float,
    left: float,
    bottom: float,
    top: float,
    *,
    percent_y: bool = False,
) -> list[str]:
    parts = []
    for tick in y.ticks() if not percent_y else [0, 0.25, 0.5, 0.75, 1.0]:
        py = y(tick)
        text = f"{tick:.0%}" if percent_y else compact(tick)
        parts.append(
            f'<line x1="{left}" x2="{right}" y1="{py:.1f}" y2="{py:.1f}" stroke="{GRID}"/>'
            f'<text class="tick" x="{left - 6}" y="{py:.1f}" text-anchor="end" '
            f'dominant-baseline="middle">{text}</text>'
        )
    for tick in x.ticks():
        px = x(tick)
        parts.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text class="tick" x="{px:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{compact(tick)}</text>"
        )
    return parts
