"""The end-of-run summary printed in the terminal: one line per strategy."""

from __future__ import annotations

from ..results.record import ResultRecord
from .terminal_text import printable


def summary_lines(records: list[ResultRecord]) -> list[str]:
    """A header line, then one aligned line per strategy (sorted by name)."""
    if not records:
        return ["ctxeval: no results recorded"]
    # Imported here, not at module top: the plugin may import this module on
    # every run, and pandas must load only when there is something to summarise.
    from ..results.frame import records_frame, strategy_summary

    # Integer columns only: iterrows over mixed int/float columns yields floats.
    others = ["divergent", "unstable", "beyond_context", "error"]
    cols = ["items", "passed", "context_loss", "model_miss", *others]
    summary = strategy_summary(records_frame(records))[[*cols, "cumulative_input_tokens"]]
    rows = [
        (
            printable(str(name)),
            f"{row['passed']}/{row['items']}",
            str(row["context_loss"]),
            str(row["model_miss"]),
            str(sum(row[c] for c in others)),
            f"{row['cumulative_input_tokens']:,}",
        )
        for name, row in summary.iterrows()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    header = (
        f"ctxeval: {len(records)} items, {len(rows)} "
        f"{'strategy' if len(rows) == 1 else 'strategies'}"
    )
    lines = [header]
    for name, passed, loss, miss, other, tokens in rows:
        lines.append(
            f"{name:<{widths[0]}}  passed {passed:>{widths[1]}}"
            f"  context_loss {loss:>{widths[2]}}  model_miss {miss:>{widths[3]}}"
            f"  other {other:>{widths[4]}}  tokens {tokens:>{widths[5]}}"
        )
    return lines
