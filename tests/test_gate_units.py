"""The gate's parts on their own: baseline file, comparison, budget rules, shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ctxeval.gate.baseline import (
    BaselineError,
    baseline_from_records,
    merge_baselines,
    read_baseline,
    write_baseline,
)
from pytest_ctxeval.gate.compare import compare, item_decision
from pytest_ctxeval.gate.exitcodes import GateExit, gate_exit
from pytest_ctxeval.gate.rules import RuleError, check_rules, parse_rules
from pytest_ctxeval.gate.shard import parse_shard, shard_of
from pytest_ctxeval.report.markdown import markdown_summary
from pytest_ctxeval.results.record import ResultRecord


def rec(probe: str, classification: str = "ok", strategy: str = "headtail", **kw) -> ResultRecord:
    verdict = "pass" if classification in ("ok", "rescued") else "fail"
    if classification == "error":
        verdict = "error"
    fields = dict(
        scenario="s1",
        scenario_file="scenarios/a.yaml",
        strategy=strategy,
        model="ctxeval/oracle",
        probe=probe,
        verdict=verdict,
        classification=classification,
        cumulative_input_tokens=1000,
        prompt_tokens=100,
        cost_usd=0.01,
    )
    fields.update(kw)
    return ResultRecord(**fields)


def test_baseline_is_sorted_one_entry_per_line_and_round_trips(tmp_path: Path) -> None:
    records = [rec("p2"), rec("p1", "context_loss"), rec("p1", strategy="full")]
    path = tmp_path / "baseline.json"
    write_baseline(path, baseline_from_records(records, model="ctxeval/oracle"))
    text = path.read_text()
    json.loads(text)  # plain JSON
    entry_lines = [line for line in text.splitlines() if line.startswith("    {")]
    assert [json.loads(line.rstrip(","))["probe"] for line in entry_lines] == ["p1", "p1", "p2"]
    assert [json.loads(line.rstrip(","))["strategy"] for line in entry_lines] == [
        "full",
        "headtail",
        "headtail",
    ]
    again = read_baseline(path)
    assert again.model == "ctxeval/oracle"
    assert {e.key for e in again.entries} == {
        ("scenarios/a.yaml", "s1", "headtail", "p1"),
        ("scenarios/a.yaml", "s1", "headtail", "p2"),
        ("scenarios/a.yaml", "s1", "full", "p1"),
    }


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such baseline; write one with --ctx-update-baseline"),
        ("{not json", "baseline.json:1:2: not a baseline (invalid JSON"),
        (
            '{"version": 1, "entries": [{"probe": "x"}]}',
            "not a baseline: entry 1 (?::?::x[?]): scenario_file: Field required",
        ),
        ('{"version": 99, "entries": []}', "baseline version 99 is not supported"),
    ],
)
def test_a_bad_baseline_is_one_clear_error(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "baseline.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(BaselineError) as info:
        read_baseline(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)


def test_only_a_new_context_loss_regresses() -> None:
    baseline = baseline_from_records(
        [rec("ok-then-loss"), rec("known-loss", "context_loss"), rec("miss"), rec("gone")]
    )
    now = [
        rec("ok-then-loss", "context_loss", nodeid="a.yaml::s1::ok-then-loss[headtail]"),
        rec("known-loss", "context_loss"),
        rec("miss", "model_miss"),
        rec("brand-new", "context_loss"),
    ]
    result = compare(now, baseline)
    assert [c.key[3] for c in result.regressions] == ["ok-then-loss"]
    change = result.regressions[0]
    assert (change.before, change.after) == ("ok", "context_loss")
    assert change.name == "a.yaml::s1::ok-then-loss[headtail]"
    assert change.show_command == (
        "ctxeval show scenarios/a.yaml --id s1 --strategy headtail --probe ok-then-loss"
    )
    assert [k[3] for k in result.known_losses] == ["known-loss"]
    assert [k[3] for k in result.new] == ["brand-new"]
    assert [k[3] for k in result.removed] == ["gone"]
    # Out of this run's scope (another strategy, a shard): not "removed".
    assert compare(now, baseline, scope=lambda key: "out").removed == []
    # Still in the scenarios, yet not in the results: missing, not removed.
    incomplete = compare(now, baseline, scope=lambda key: "expected")
    assert (incomplete.removed, [k[3] for k in incomplete.missing]) == ([], ["gone"])


def test_a_credible_fall_in_pass_rate_regresses_and_noise_does_not() -> None:
    baseline = baseline_from_records(
        [rec("p", repeat=5, pass_rate=1.0), rec("q", repeat=5, pass_rate=1.0)]
    )
    now = [
        rec("p", "unstable", repeat=5, pass_rate=0.0),
        rec("q", "unstable", repeat=5, pass_rate=0.8),
    ]
    result = compare(now, baseline)
    assert [c.key[3] for c in result.regressions] == ["p"]
    assert result.regressions[0].before == "ok (5/5)"
    assert result.regressions[0].after == "unstable (0/5)"


def test_item_decisions_under_the_gate() -> None:
    ok, loss = rec("p"), rec("p", "context_loss")
    base_ok = baseline_from_records([ok]).entries[0]
    base_loss = baseline_from_records([loss]).entries[0]
    assert item_decision(loss, base_ok)[0] == "fail"
    assert item_decision(loss, base_loss) == (
        "xfail",
        "known context_loss (recorded in the baseline)",
    )
    assert item_decision(loss, None)[0] == "xfail"
    assert item_decision(rec("p", "model_miss"), base_ok)[0] == "xfail"
    assert item_decision(rec("p", "error"), base_ok)[0] == "fail"
    assert item_decision(ok, base_loss) == ("pass", "")


def test_rules_parse_and_quote_a_bad_expression() -> None:
    rules = parse_rules("tokens:+10%, cost:+5%; headtail(head=5,tail=5):pass_rate:-0.05")
    assert [(r.metric, r.limit, r.relative, r.strategy) for r in rules] == [
        ("tokens", pytest.approx(0.10), True, None),
        ("cost", pytest.approx(0.05), True, None),
        ("pass_rate", pytest.approx(-0.05), False, "headtail(head=5,tail=5)"),
    ]
    for bad, expected in [
        ("tokens:10%", "'tokens:10%'; expected [STRATEGY:]METRIC:CHANGE"),
        ("speed:+5%", "unknown metric 'speed'"),
        ("tokens:+0%", "give the change with a sign and a size"),
    ]:
        with pytest.raises(RuleError) as info:
            parse_rules(bad)
        assert expected in str(info.value)


def test_rules_fail_only_the_strategy_that_moved_past_its_limit() -> None:
    baseline = baseline_from_records(
        [rec("p", cumulative_input_tokens=1000), rec("p", strategy="full")]
    )
    now = [
        rec("p", cumulative_input_tokens=1200),  # +20 %
        rec("p", strategy="full", cumulative_input_tokens=1050),  # +5 %
        rec("new", cumulative_input_tokens=10**6),  # not in the baseline: ignored
    ]
    breaches = check_rules(parse_rules("tokens:+10%"), now, baseline)
    assert [(b.strategy, b.rule.metric) for b in breaches] == [("headtail", "tokens")]
    assert "1,000 -> 1,200 (+20.0%; allowed +10%)" in str(breaches[0])
    assert check_rules(parse_rules("tokens:+25%"), now, baseline) == []
    down = [rec("p", "context_loss"), rec("p", strategy="full")]
    assert [b.strategy for b in check_rules(parse_rules("pass_rate:-0.05"), down, baseline)] == [
        "headtail"
    ]
    assert check_rules(parse_rules("full:pass_rate:-0.05"), down, baseline) == []


def test_the_cost_rule_counts_each_session_once_and_each_probe() -> None:
    # Two probes of one session: the session's $1.00 is one cost, not two.
    was = [rec(p, cost_usd=0.01, session_cost_usd=1.0) for p in ("p1", "p2")]
    baseline = baseline_from_records(was)
    same = [rec(p, cost_usd=0.01, session_cost_usd=1.0) for p in ("p1", "p2")]
    assert check_rules(parse_rules("cost:+5%"), same, baseline) == []
    dearer = [rec(p, cost_usd=0.01, session_cost_usd=1.2) for p in ("p1", "p2")]
    (breach,) = check_rules(parse_rules("cost:+5%"), dearer, baseline)
    # 1.00 + 2 x 0.01 -> 1.20 + 2 x 0.01
    assert "1.02 -> 1.22" in str(breach), str(breach)


def test_shards_are_stable_and_cover_everything_once() -> None:
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(ValueError, match="expected I/N"):
            parse_shard(bad)
    names = [(f"scenarios/f{i % 7}.yaml", f"s{i}") for i in range(200)]
    shards = [shard_of(f, s, 4) for f, s in names]
    assert set(shards) == {1, 2, 3, 4}
    assert min(shards.count(k) for k in range(1, 5)) > 25  # roughly even
    assert shards == [shard_of(f, s, 4) for f, s in names]  # stable


def test_merged_baselines_join_shards_and_refuse_conflicts() -> None:
    one = baseline_from_records([rec("p1")], model="m")
    two = baseline_from_records([rec("p2")], model="m")
    merged = merge_baselines([two, one])
    assert [e.probe for e in merged.entries] == ["p1", "p2"]
    clash = baseline_from_records([rec("p1", "context_loss")])
    with pytest.raises(BaselineError, match="differs between the baselines"):
        merge_baselines([one, clash])


def test_exit_codes_tell_regression_budget_and_errors_apart() -> None:
    assert gate_exit(regressions=1, breaches=1, errors=1) is GateExit.REGRESSION
    assert gate_exit(regressions=0, breaches=2, errors=1) is GateExit.BUDGET
    assert gate_exit(regressions=0, breaches=0, errors=1) is GateExit.ERRORS
    assert gate_exit(regressions=0, breaches=0, errors=0) is GateExit.OK


def test_markdown_summary_tables_and_escapes() -> None:
    baseline = baseline_from_records([rec("p|1")])
    now = [rec("p|1", "context_loss")]
    text = markdown_summary(now, comparison=compare(now, baseline))
    assert text.startswith("## ctxeval: 1 items, 1 strategies, 1 regression against the baseline")
    assert "| headtail | 0/1 | 1 | 0 | 0 | 1,000 | – | 0.0100 | 0.0100 |" in text
    assert "p\\|1" in text and "| p|1" not in text
    assert "ok | context_loss" in text
