"""Results as pandas frames, for notebooks and CI scripts.

    from pytest_ctxeval import results_frame, strategy_table, pareto_front
    df = results_frame("reports/results.jsonl")
    strategy_table(df)            # pass rate, tokens, tokens saved, cost per passed probe
    pass_rate_matrix(df)          # scenario x strategy
    pareto_front(strategy_table(df))
    task_costs(df)                # per scenario x strategy: its session once plus its probes

The report and the gate read the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .frame import hit_ratios, records_frame, session_frame, session_tokens
from .reading import read_results
from .record import CLASSIFICATIONS, ResultRecord

_CATEGORIES = {
    "classification": list(CLASSIFICATIONS),
    "verdict": ["pass", "fail", "error"],
}
_LABELS = ("scenario_file", "scenario", "model", "probe", "cache_model")
# Optional numbers: missing (<NA>) where the record has none.
_NULLABLE_FLOATS = (
    "pass_rate",
    "ground_truth_pass_rate",
    "agreement",
    "needle_depth",
    "session_cache_hit_ratio",
)
_NULLABLE_INTS = ("budget", "probe_turn")


def results_frame(source: str | Path | Iterable[ResultRecord]) -> pd.DataFrame:
    """One row per record, with typed columns: ``classification`` and
    ``verdict`` are categoricals in the record's order, ``strategy`` a
    categorical of the strategies present (sorted), other labels strings,
    counts int64, costs float64, flags bool, and optional rates, depths and
    budgets nullable (Float64, Int64)."""
    records = read_results(Path(source)) if isinstance(source, (str, Path)) else list(source)
    return typed_frame(records_frame(records))


def typed_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``records_frame``'s frame with the column types of ``results_frame``
    (a copy: the frame given is left as it is)."""
    df = df.copy()
    for column, categories in _CATEGORIES.items():
        df[column] = pd.Categorical(df[column], categories=categories)
    df["strategy"] = pd.Categorical(df["strategy"], categories=sorted(set(df["strategy"])))
    for column in _LABELS:
        df[column] = df[column].astype("string")
    fields = ResultRecord.model_fields
    for name, info in fields.items():
        if info.annotation is int:
            df[name] = df[name].astype("int64")
        elif info.annotation is float:
            df[name] = df[name].astype("float64")
        elif info.annotation is bool:
            df[name] = df[name].astype("bool")
    for column in _NULLABLE_FLOATS:
        df[column] = df[column].astype("Float64")
    for column in _NULLABLE_INTS:
        if column in df:
            df[column] = df[column].astype("Int64")
    return df


def _passed(df: pd.DataFrame) -> pd.Series:
    """1 per passing probe, or its pass rate when it was asked several times;
    NaN for an uncheckable one (no verdict: pass rates leave it out)."""
    passed = df["pass_rate"].fillna(df["verdict"].eq("pass").astype(float)).astype(float)
    return passed.where(df["classification"].astype(str) != "uncheckable")


def pass_rate_matrix(df: pd.DataFrame) -> pd.DataFrame:
    """Scenario x strategy: the fraction of probes passed."""
    return (
        df.assign(_passed=_passed(df))
        .pivot_table(index="scenario", columns="strategy", values="_passed", aggfunc="mean")
        .sort_index()
        .sort_index(axis=1)
    )


def strategy_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: items, pass rate, context losses, cumulative input tokens
    (each simulated session once), tokens saved against ``full`` over the same
    sessions (NaN without a ``full`` run), cost (each session once plus every
    probe), cost per passed probe, cost per task (a scenario's session and its
    probes) and the sessions' prompt-cache hit ratio."""
    passed = df.assign(_passed=_passed(df), _loss=df["classification"].eq("context_loss"))
    table = passed.groupby("strategy", observed=True).agg(
        items=("_passed", "size"),
        pass_rate=("_passed", "mean"),
        context_loss=("_loss", "sum"),
    )
    tasks = task_costs(df).groupby("strategy", observed=True)
    table["cost_usd"] = tasks["task_cost_usd"].sum()
    table["cumulative_input_tokens"] = session_tokens(df)
    table["tokens_saved_vs_full"] = _saved_against_full(df)
    passed_count = passed.groupby("strategy", observed=True)["_passed"].sum()
    table["cost_per_passed_probe"] = table["cost_usd"] / passed_count.where(passed_count > 0)
    table["cost_per_task_usd"] = tasks["task_cost_usd"].mean()
    table["cache_hit_ratio"] = hit_ratios(tasks)
    return table.sort_index()


def task_costs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per task (scenario file x scenario x strategy x model x budget):
    ``probes``, the session's figures once (``session_cost_usd``,
    ``session_input_tokens``, ...), ``probe_cost_usd`` (its probes' asks and
    strategy calls), ``task_cost_usd`` = session + probes, the same with the
    prompt cache (``task_cached_cost_usd``), and the session's
    ``cache_hit_ratio``."""
    sessions = session_frame(df)
    inputs = sessions["session_input_tokens"].astype(float)
    sessions["cache_hit_ratio"] = sessions["session_cached_tokens"] / inputs.where(inputs > 0)
    return sessions


def _saved_against_full(df: pd.DataFrame) -> pd.Series:
    # Plain names, not categories: ``xs`` below looks one up.
    named = df.assign(strategy=df["strategy"].astype(str))
    per_session = named.groupby(["strategy", "scenario_file", "scenario"], observed=True)[
        "cumulative_input_tokens"
    ].max()
    if "full" not in per_session.index.get_level_values("strategy"):
        return pd.Series(dtype=float)
    full = per_session.xs("full", level="strategy")
    saved = {}
    for strategy, sessions in per_session.groupby(level="strategy"):
        mine = sessions.droplevel("strategy")
        shared = mine.index.intersection(full.index)
        total_full = full.loc[shared].sum()
        saved[strategy] = 1 - mine.loc[shared].sum() / total_full if total_full else float("nan")
    return pd.Series(saved, dtype=float)


def pareto_front(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a strategy table that no other beats on both counts: no
    strategy passes as much or more with fewer tokens. Cheapest first."""
    ordered = table.sort_values(
        ["cumulative_input_tokens", "pass_rate"], ascending=[True, False], kind="stable"
    )
    best = ordered["pass_rate"].cummax().shift(fill_value=-1.0)
    return ordered[ordered["pass_rate"] > best]
