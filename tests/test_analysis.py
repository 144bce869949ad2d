"""The pandas analysis API over result records."""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_ctxeval import (
    load_results,
    pareto_front,
    pass_rate_matrix,
    results_frame,
    strategy_table,
    task_costs,
)
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.store import write_results


def rec(scenario: str, strategy: str, probe: str, classification: str, tokens: int, **kw):
    verdict = "pass" if classification in ("ok", "rescued") else "fail"
    return ResultRecord(
        scenario=scenario,
        scenario_file=f"scenarios/{scenario}.yaml",
        strategy=strategy,
        model="m",
        probe=probe,
        verdict=verdict,
        classification=classification,
        cumulative_input_tokens=tokens,
        **kw,
    )


RECORDS = [
    # full: passes everything, 1,000 tokens per session.
    rec("a", "full", "p1", "ok", 1000, cost_usd=0.02),
    rec("a", "full", "p2", "ok", 1000, cost_usd=0.02),
    rec("b", "full", "p1", "ok", 1000, cost_usd=0.02),
    # sliding: cheap and loses one.
    rec("a", "sliding", "p1", "ok", 300, cost_usd=0.01),
    rec("a", "sliding", "p2", "context_loss", 300, cost_usd=0.01),
    rec("b", "sliding", "p1", "ok", 300, cost_usd=0.01),
    # truncate: as cheap as sliding and worse: dominated.
    rec("a", "truncate", "p1", "context_loss", 400),
    rec("a", "truncate", "p2", "context_loss", 400),
    rec("b", "truncate", "p1", "ok", 400),
    # repeated: a pass rate, not a verdict, counts.
    rec("a", "headtail", "p1", "unstable", 500, repeat=4, pass_rate=0.75),
    rec("a", "headtail", "p2", "ok", 500),
    rec("b", "headtail", "p1", "ok", 500),
]


def test_the_frame_has_typed_columns(tmp_path) -> None:
    path = tmp_path / "results.jsonl"
    write_results(path, RECORDS)
    df = results_frame(path)
    assert len(df) == 12
    assert isinstance(df["classification"].dtype, pd.CategoricalDtype)
    assert list(df["classification"].cat.categories)[:3] == ["ok", "rescued", "context_loss"]
    assert isinstance(df["strategy"].dtype, pd.CategoricalDtype)
    assert list(df["strategy"].cat.categories) == ["full", "headtail", "sliding", "truncate"]
    assert df["scenario"].dtype == "string"
    assert df["cumulative_input_tokens"].dtype == "int64"
    assert df["session_cached_tokens"].dtype == "int64"
    assert df["cost_usd"].dtype == "float64"
    assert df["session_cost_usd"].dtype == "float64"
    assert df["unstable"].dtype == "bool"
    assert df["pass_rate"].dtype == "Float64"
    assert df["session_cache_hit_ratio"].dtype == "Float64"
    assert df["budget"].dtype == "Int64"
    assert results_frame(RECORDS).equals(df)
    # The same frame straight from the loader.
    assert load_results(path, as_frame=True).equals(df)
    assert [r.probe for r in load_results(path)] == [r.probe for r in RECORDS]


def test_strategy_table_counts_sessions_once_and_compares_with_full() -> None:
    table = strategy_table(results_frame(RECORDS))
    assert table.loc["sliding", "cumulative_input_tokens"] == 600  # two sessions, not three probes
    assert table.loc["sliding", "tokens_saved_vs_full"] == pytest.approx(0.7)
    assert table.loc["full", "tokens_saved_vs_full"] == pytest.approx(0.0)
    assert table.loc["sliding", "pass_rate"] == pytest.approx(2 / 3)
    assert table.loc["headtail", "pass_rate"] == pytest.approx((0.75 + 1 + 1) / 3)
    assert table.loc["sliding", "context_loss"] == 1
    assert table.loc["full", "cost_per_passed_probe"] == pytest.approx(0.02)
    assert table.loc["truncate", "cost_per_passed_probe"] == 0


def test_pass_rate_matrix_is_scenario_by_strategy() -> None:
    matrix = pass_rate_matrix(results_frame(RECORDS))
    assert list(matrix.columns) == ["full", "headtail", "sliding", "truncate"]
    assert matrix.loc["a", "sliding"] == pytest.approx(0.5)
    assert matrix.loc["b", "truncate"] == pytest.approx(1.0)


def test_the_pareto_front_drops_dominated_strategies() -> None:
    front = pareto_front(strategy_table(results_frame(RECORDS)))
    assert list(front.index) == ["sliding", "headtail", "full"]


# -- cost per task: a scenario's session once, plus its probes ---------------------------------

SESSION = {"session_cost_usd": 1.0, "session_input_tokens": 1000, "session_cached_tokens": 800}
TASKS = [
    rec("a", "compaction", "p1", "ok", 1000, cost_usd=0.1, **SESSION),
    rec("a", "compaction", "p2", "ok", 1000, cost_usd=0.1, **SESSION),
    rec("a", "compaction", "p3", "context_loss", 1000, cost_usd=0.1, **SESSION),
    rec(
        "b",
        "compaction",
        "p1",
        "ok",
        500,
        cost_usd=0.2,
        session_cost_usd=0.5,
        session_input_tokens=1000,
        session_cached_tokens=0,
    ),
]


def test_a_task_counts_its_session_once_and_each_probe() -> None:
    tasks = task_costs(results_frame(TASKS)).set_index("scenario")
    assert tasks.loc["a", "probes"] == 3
    assert tasks.loc["a", "session_cost_usd"] == pytest.approx(1.0)  # not 3.0
    assert tasks.loc["a", "task_cost_usd"] == pytest.approx(1.3)
    assert tasks.loc["b", "task_cost_usd"] == pytest.approx(0.7)
    assert tasks.loc["a", "cache_hit_ratio"] == pytest.approx(0.8)


def test_the_strategy_table_costs_sessions_once() -> None:
    table = strategy_table(results_frame(TASKS))
    assert table.loc["compaction", "cost_usd"] == pytest.approx(2.0)  # 1.3 + 0.7
    assert table.loc["compaction", "cost_per_task_usd"] == pytest.approx(1.0)
    assert table.loc["compaction", "cost_per_passed_probe"] == pytest.approx(2.0 / 3)
    # Cached over input tokens, each session once: 800 of 2,000.
    assert table.loc["compaction", "cache_hit_ratio"] == pytest.approx(0.4)


def test_sessions_in_two_files_with_one_id_are_two_sessions() -> None:
    other = rec("a", "compaction", "p1", "ok", 1000, cost_usd=0.1, **SESSION)
    other.scenario_file = "scenarios/other.yaml"
    tasks = task_costs(results_frame([*TASKS, other]))
    assert len(tasks) == 3
    assert (
        strategy_table(results_frame([*TASKS, other])).loc["compaction", "cumulative_input_tokens"]
        == 2500
    )


def test_an_uncheckable_probe_is_left_out_of_pass_rates() -> None:
    records = [
        rec("a", "full", "p1", "ok", 1000, cost_usd=0.02),
        rec("a", "full", "p2", "context_loss", 1000, cost_usd=0.02),
        rec("a", "full", "p3", "ok", 1000).model_copy(
            update={"verdict": "error", "classification": "uncheckable"}
        ),
    ]
    df = results_frame(records)
    table = strategy_table(df)
    assert table.loc["full", "items"] == 3
    assert table.loc["full", "pass_rate"] == pytest.approx(0.5)
    assert table.loc["full", "cost_per_passed_probe"] == pytest.approx(0.04)
    assert pass_rate_matrix(df).loc["a", "full"] == pytest.approx(0.5)
