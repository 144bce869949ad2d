"""Results as pandas frames, for notebooks and CI scripts.

    from pytest_ctxeval import results_frame, strategy_table, pareto_front
    df = results_frame("reports/results.jsonl")
    strategy_table(df)            # pass rate, tokens, tokens saved, cost per passed probe
    pass_rate_matrix(df)          # scenario x strategy
    pareto_front(strategy_table(df))

The report and the gate read the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .frame import records_frame, session_tokens
from .record import CLASSIFICATIONS, ResultRecord
from .store import load_results

_CATEGORIES = {
    "classification": list(CLASSIFICATIONS),
    "verdict": ["pass", "fail", "error"],
}
_LABELS = ("scenario_file", "scenario", "strategy", "model", "probe")


def results_frame(source: str | Path | Iterable[ResultRecord]) -> pd.DataFrame:
    """One row per record, with typed columns: ``classification`` and
    ``verdict`` are ordered categoricals (worst-last as in the record's list),
    labels are strings, counts are int64 and rates nullable floats."""
    records = load_results(source) if isinstance(source, (str, Path)) else list(source)
    df = records_frame(records)
    for column, categories in _CATEGORIES.items():
        df[column] = pd.Categorical(df[column], categories=categories)
    for column in _LABELS:
        df[column] = df[column].astype("string")
    for column in ("pass_rate", "ground_truth_pass_rate", "agreement"):
        df[column] = df[column].astype("Float64")
    return df


def _passed(df: pd.DataFrame) -> pd.Series:
    """1 per passing probe, or its pass rate when it was asked several times."""
    return df["pass_rate"].fillna(df["verdict"].eq("pass").astype(float)).astype(float)


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
    sessions (NaN without a ``full`` run), cost and cost per passed probe."""
    passed = df.assign(_passed=_passed(df), _loss=df["classification"].eq("context_loss"))
    table = passed.groupby("strategy", observed=True).agg(
        items=("_passed", "size"),
        pass_rate=("_passed", "mean"),
        context_loss=("_loss", "sum"),
        cost_usd=("cost_usd", "sum"),
    )
    table["cumulative_input_tokens"] = session_tokens(df)
    table["tokens_saved_vs_full"] = _saved_against_full(df)
    passed_count = table["pass_rate"] * table["items"]
    table["cost_per_passed_probe"] = table["cost_usd"] / passed_count.where(passed_count > 0)
    return table.sort_index()


def _saved_against_full(df: pd.DataFrame) -> pd.Series:
    per_session = df.groupby(["strategy", "scenario_file", "scenario"], observed=True)[
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
