"""A Markdown summary of a run, for ``$GITHUB_STEP_SUMMARY`` or a pull-request comment."""

from __future__ import annotations

from ..gate.compare import Comparison
from ..gate.rules import Breach
from ..results.record import ResultRecord
from .evidence import evidence_markdown

_OTHER = ("divergent", "unstable", "beyond_context", "uncheckable", "error")


def _cell(text: object) -> str:
    """Table cells come from scenario names and ids: keep them from breaking the table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _percent(value: float) -> str:
    return "–" if value != value else f"{value:.0%}"  # NaN: no session tokens


def markdown_summary(
    records: list[ResultRecord],
    *,
    comparison: Comparison | None = None,
    breaches: list[Breach] | None = None,
    title: str = "ctxeval",
) -> str:
    from ..results.frame import records_frame, strategy_summary

    summary = strategy_summary(records_frame(records))
    headline = f"{len(records)} items, {len(summary)} strategies"
    if comparison is not None:
        n = len(comparison.regressions)
        headline += f", {n} regression{'s' if n != 1 else ''} against the baseline"
    lines = [f"## {title}: {headline}", ""]
    lines += [
        "| strategy | passed | context_loss | model_miss | other | input tokens | cache hit "
        "| cost (USD) | cost per task (USD) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in summary.iterrows():
        other = sum(int(row[c]) for c in _OTHER)
        lines.append(
            f"| {_cell(name)} | {int(row['passed'])}/{int(row['items'])} "
            f"| {int(row['context_loss'])} | {int(row['model_miss'])} | {other} "
            f"| {int(row['cumulative_input_tokens']):,} | {_percent(row['cache_hit_ratio'])} "
            f"| {row['cost_usd']:.4f} | {row['cost_per_task_usd']:.4f} |"
        )
    from .sweeps import sweep_markdown_lines

    lines += sweep_markdown_lines(records)
    lines += evidence_markdown(records)
    if comparison is not None:
        lines += _comparison_lines(comparison)
    if breaches:
        lines += ["", "### Budget rules broken", ""]
        lines += [f"- {_cell(b)}" for b in breaches]
    return "\n".join(lines) + "\n"


def _comparison_lines(comparison: Comparison) -> list[str]:
    lines: list[str] = []
    if comparison.regressions:
        lines += ["", "### Regressions", "", "| probe | before | now | show the window |"]
        lines.append("|---|---|---|---|")
        for change in comparison.regressions:
            lines.append(
                f"| `{_cell(change.name)}` | {_cell(change.before)} | {_cell(change.after)} "
                f"| `{_cell(change.show_command)}` |"
            )
    if comparison.improvements:
        lines += ["", "### Improvements", ""]
        lines += [
            f"- `{_cell(c.name)}`: {_cell(c.before)} → {_cell(c.after)}"
            for c in comparison.improvements
        ]
    counts = [
        (len(comparison.known_losses), "known context losses (in the baseline)"),
        (len(comparison.new), "probes not in the baseline"),
        (len(comparison.renamed), "probes renamed (matched by their text)"),
        (len(comparison.missing), "probes missing from the results (incomplete)"),
        (len(comparison.removed), "baseline probes unmatched"),
    ]
    shown = [f"{n} {what}" for n, what in counts if n]
    if shown:
        lines += ["", "; ".join(shown) + "."]
    return lines
