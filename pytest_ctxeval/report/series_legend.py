"""The per-call series chart's legend: a button per strategy that shows or
hides its lines (the page's script toggles them), and which strategies are
shown at first: ``full`` and the two cheapest, so a chart of a dozen
strategies opens readable."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from markupsafe import escape

SHOWN_AT_FIRST = 2  # the cheapest strategies shown besides full


def shown_at_first(series: Mapping[str, Sequence[int]]) -> set[str]:
    """``full`` and the strategies with the fewest prompt tokens over the
    chart's calls (ties by name); every one when there are few."""
    others = sorted((n for n in series if n != "full"), key=lambda n: (sum(series[n]), n))
    return {n for n in series if n == "full"} | set(others[:SHOWN_AT_FIRST])


def group_open(name: str, shown: bool) -> str:
    """The group holding one strategy's lines."""
    off = "" if shown else " off"
    return f'<g class="series-group{off}" data-series="{escape(name)}">'


def toggle_legend(names: Sequence[str], colour: Callable[[str], str], shown: set[str]) -> str:
    items = "".join(
        f'<li><button type="button" class="series-toggle" data-series="{escape(n)}" '
        f'aria-pressed="{"true" if n in shown else "false"}" '
        f'title="Show or hide {escape(n)}">'
        f'<span class="swatch" style="background:{colour(n)}"></span>{escape(n)}</button></li>'
        for n in sorted(names)
    )
    hidden = len(names) - len(shown)
    note = f'<li class="meta">{hidden} more hidden: select a name to show it</li>' if hidden else ""
    return f'<ul class="chart-legend toggles">{items}{note}</ul>'
