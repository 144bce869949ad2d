"""The end-of-run summary printed in the terminal: one line per strategy."""

from __future__ import annotations

from ..results.record import ResultRecord
from .evidence import evidence_lines
from .rollout_summary import rollout_lines
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
    cols = ["items", "passed", "context_loss", "model_miss", "uncheckable", *others]
    full = strategy_summary(records_frame(records))
    summary = full[[*cols, "cumulative_input_tokens"]]
    errored = {
        name for name, row in summary.iterrows() if row["error"] and row["error"] == row["items"]
    }
    rows = [
        (
            printable(str(name)),
            f"{row['passed']}/{row['items']}",
            str(row["context_loss"]),
            str(row["model_miss"]),
            str(sum(row[c] for c in others)),
            # A strategy whose every item errored measured no tokens: not 0.
            "not measured" if name in errored else f"{row['cumulative_input_tokens']:,}",
            _ratio(float(full.at[name, "cache_hit_ratio"])),  # type: ignore[arg-type]
            f"${float(full.at[name, 'cost_per_task_usd']):.4f}",  # type: ignore[arg-type]
            str(row["uncheckable"]),
        )
        for name, row in summary.iterrows()
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    header = (
        f"ctxeval: {len(records)} items, {len(rows)} "
        f"{'strategy' if len(rows) == 1 else 'strategies'}"
    )
    lines = [header]
    # cache hit: cached / input tokens over the sessions' requests, shown
    # when sessions were simulated; cost/task: a scenario's session once plus
    # its probes (docs/costs.md), shown when the sessions were priced.
    show_hits = bool(full["cache_hit_ratio"].notna().any())
    show_cost = any(r.session_cost_usd > 0 for r in records)
    # Probes a decoy passes (no verdict): shown when there are any.
    show_unchecked = any(r.classification == "uncheckable" for r in records)
    for name, passed, loss, miss, other, tokens, hits, task, unchecked in rows:
        lines.append(
            f"{name:<{widths[0]}}  passed {passed:>{widths[1]}}"
            f"  context_loss {loss:>{widths[2]}}  model_miss {miss:>{widths[3]}}"
            + (f"  uncheckable {unchecked:>{widths[8]}}" if show_unchecked else "")
            + f"  other {other:>{widths[4]}}  tokens {tokens:>{widths[5]}}"
            + (f"  cache hit {hits:>{widths[6]}}" if show_hits else "")
            + (f"  cost/task {task:>{widths[7]}}" if show_cost else "")
        )
    lines += [printable(line) for line in evidence_lines(records)]
    return lines + rollout_lines(records)


def _ratio(value: float) -> str:
    return "-" if value != value else f"{value:.0%}"  # NaN: no session tokens
