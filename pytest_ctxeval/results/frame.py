"""Result records as a pandas frame, and the per-strategy / per-scenario aggregates.

Imported only when a report is written (pandas costs ~0.5 s to import), so the
top-level import is fine here but callers must import this module lazily.
"""

from __future__ import annotations

import operator
from typing import Any

import pandas as pd
from pandas.core.groupby import DataFrameGroupBy

from .record import CLASSIFICATIONS, ResultRecord

# Worst first: a matrix cell shows the most alarming outcome of its probes.
# context_loss is the bug the tool exists to catch; error means "unknown" and
# must not hide behind ok; model_miss is not the strategy's fault.
# beyond_context may hide a loss (there is no ground truth to tell); unstable
# is noise that is not credibly the strategy's.
SEVERITY: dict[str, int] = {
    "context_loss": 8,
    "error": 7,
    "beyond_context": 6,
    "divergent": 5,
    "unstable": 4,
    # No verdict: the probe measures nothing, which its author must hear of.
    "uncheckable": 3,
    "model_miss": 2,
    "rescued": 1,
    "ok": 0,
}

SUMMARY_COLUMNS: tuple[str, ...] = (
    "items",
    "passed",
    *CLASSIFICATIONS,
    "cumulative_input_tokens",
    "mean_prompt_tokens",
    "cost_usd",
    "memory_retrievals",
    "tokens_saved_vs_full",
    "cost_per_task_usd",
    "cache_hit_ratio",
)
# One simulated session: every probe (and repeat) of a scenario under one
# strategy, model and budget shares it (see ResultRecord's per-session fields).
SESSION_KEYS = ["scenario_file", "scenario", "strategy", "model", "budget"]
SESSION_COLUMNS = (
    "session_input_tokens",
    "session_output_tokens",
    "session_cached_tokens",
    "session_cache_write_tokens",
    "session_cost_usd",
    "session_cached_cost_usd",
    "session_strategy_calls",
)


def records_frame(records: list[ResultRecord]) -> pd.DataFrame:
    """One row per record; columns are the record fields (dict fields stay dicts)."""
    columns = list(ResultRecord.model_fields)
    if not records:
        return pd.DataFrame(columns=columns)
    # From the records' own field values, not from model_dump(): dumping
    # copies every nested list and dict (a LoCoMo-size run's per-request
    # series and fact tables), 27 s for 16,720 records against 0.3 s; the
    # frame only reads them.  Each record's values are read at once, then
    # turned into columns: reading one field of every record, field after
    # field, walks the whole heap 77 times (1.5 s).
    values = operator.itemgetter(*columns)
    by_column = zip(*(values(r.__dict__) for r in records), strict=True)
    data = dict(zip(columns, map(list, by_column), strict=True))
    # Extra (allowed) fields go after the declared ones, in first-seen order.
    extra: dict[str, None] = {}
    for record in records:
        extra.update(dict.fromkeys(record.model_extra or {}))
    for name in extra:
        data[name] = [(r.model_extra or {}).get(name, float("nan")) for r in records]
    return pd.DataFrame(data, columns=columns + list(extra))


def session_tokens(df: pd.DataFrame) -> pd.Series:
    """Input tokens per strategy: each simulated session's requests once, plus
    every request of every probe (each ask, each retrieval turn).

    All probes (and repeats) of one scenario under one strategy and budget
    share one simulated session (budget is part of the key: a budget sweep
    simulates one session per budget), so the session's figure is taken once
    per session.  Records written before ``probe_input_tokens`` existed give
    the largest ``cumulative_input_tokens`` of the session instead.
    """
    columns = ["cumulative_input_tokens", "session_input_tokens", "probe_input_tokens"]
    grouped = df.groupby(SESSION_KEYS, dropna=False, observed=True)[columns]
    per_session = grouped.agg(
        {
            "cumulative_input_tokens": "max",
            "session_input_tokens": "max",
            "probe_input_tokens": "sum",
        }
    )
    counted = per_session["probe_input_tokens"] > 0
    totals = per_session["cumulative_input_tokens"].where(
        ~counted, per_session["session_input_tokens"] + per_session["probe_input_tokens"]
    )
    return totals.groupby(level="strategy", observed=True).sum()


def session_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One row per simulated session (``SESSION_KEYS``): its per-session
    figures once, however many probes it had, and ``probes`` and
    ``probe_cost_usd`` (their ``cost_usd`` summed).  A ``--ctx-sweep`` point
    asks from part of the session: the whole session's figures (the largest)
    are the ones kept."""
    columns = [*SESSION_KEYS, *SESSION_COLUMNS, "cost_usd", "cached_cost_usd"]
    if df.empty:
        return pd.DataFrame(columns=[*columns, "probes", "probe_cost_usd", "task_cost_usd"])
    grouped = df.groupby(SESSION_KEYS, dropna=False, observed=True, sort=True)
    sessions = grouped[list(SESSION_COLUMNS)].max()
    sessions["probes"] = grouped.size()
    sessions["probe_cost_usd"] = grouped["cost_usd"].sum()
    sessions["probe_cached_cost_usd"] = grouped["cached_cost_usd"].sum()
    sessions["task_cost_usd"] = sessions["session_cost_usd"] + sessions["probe_cost_usd"]
    sessions["task_cached_cost_usd"] = (
        sessions["session_cached_cost_usd"] + sessions["probe_cached_cost_usd"]
    )
    return sessions.reset_index()


def hit_ratios(sessions: DataFrameGroupBy[Any, Any]) -> pd.Series:
    """Per group of sessions: cached input tokens over input tokens, every
    session's requests counted once; NaN without input tokens."""
    sums = sessions[["session_cached_tokens", "session_input_tokens"]].sum()
    inputs = sums["session_input_tokens"].astype(float)
    return sums["session_cached_tokens"] / inputs.where(inputs > 0)


def strategy_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per-strategy counts, tokens and cost, indexed by strategy (sorted)."""
    if df.empty:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS), index=pd.Index([], name="strategy"))

    base = (
        df.assign(_passed=df["verdict"].eq("pass"))
        .groupby("strategy", sort=True)
        .agg(
            items=("verdict", "size"),
            passed=("_passed", "sum"),
            mean_prompt_tokens=("prompt_tokens", "mean"),
            memory_retrievals=("memory_retrievals", "sum"),
            _prompt_sum=("prompt_tokens", "sum"),
            _full_sum=("full_prompt_tokens", "sum"),
        )
    )
    # reindex so every classification has a column, even when none occurred.
    counts = pd.crosstab(df["strategy"], df["classification"]).reindex(
        columns=list(CLASSIFICATIONS), fill_value=0
    )
    out = base.join(counts).fillna({c: 0 for c in CLASSIFICATIONS})
    out["cumulative_input_tokens"] = session_tokens(df)
    # Probes' costs plus each session's once; a task is one scenario's session and its probes.
    tasks = session_frame(df).groupby("strategy", observed=True)
    out["cost_usd"] = tasks["task_cost_usd"].sum()
    out["cost_per_task_usd"] = tasks["task_cost_usd"].mean()
    out["cache_hit_ratio"] = hit_ratios(tasks)
    # Undefined (NaN) rather than 0 or 1 when no full-context size is known.
    full = out["_full_sum"].where(out["_full_sum"] > 0)
    out["tokens_saved_vs_full"] = 1 - out["_prompt_sum"] / full

    out = out[list(SUMMARY_COLUMNS)]
    int_cols = ["items", "passed", *CLASSIFICATIONS, "cumulative_input_tokens", "memory_retrievals"]
    out = out.astype({c: "int64" for c in int_cols})
    out.index.name = "strategy"
    return out.sort_index()


def classification_matrix(df: pd.DataFrame) -> pd.DataFrame:
    """Scenario x strategy; each cell names the worst classification and its count.

    ``"ok 3"`` means all three probes were ok; ``"context_loss 1/3"`` means one of
    three was lost. Pairs that were not run are empty strings.
    """
    if df.empty:
        return pd.DataFrame(
            index=pd.Index([], name="scenario"), columns=pd.Index([], name="strategy")
        )

    keys = ["scenario", "strategy"]
    ranked = df[keys + ["classification"]].assign(_rank=df["classification"].map(SEVERITY))
    worst_rank = ranked.groupby(keys)["_rank"].transform("max")
    ranked = ranked.assign(_is_worst=ranked["_rank"].eq(worst_rank))
    agg = ranked.groupby(keys).agg(
        rank=("_rank", "max"), total=("_rank", "size"), worst=("_is_worst", "sum")
    )

    name = agg["rank"].map({v: k for k, v in SEVERITY.items()})
    total = agg["total"].astype(str)
    fraction = agg["worst"].astype(str) + "/" + total
    cell = name + " " + fraction.where(agg["worst"] != agg["total"], total)

    matrix = cell.unstack("strategy").sort_index().sort_index(axis=1)
    return matrix.fillna("")
