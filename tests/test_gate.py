"""The CI regression gate end to end: --ctx-update-baseline writes the baseline,
--ctx-baseline compares (only a regression fails), --ctx-fail-if budget rules,
exit codes, --ctx-shard, --junitxml properties and the Markdown summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CtxProject, assert_no_traceback, output

# launch-code is lost by sliding (the fact sits before 12 turns of chit-chat)
# and kept by full; capital is a model miss for both.
RECALL = """
    id: recall
    system: You are a helpful assistant.
    turns:
      - user: "Before we start: the launch code is ZEBRA-42."
      - assistant: Noted, I will remember it.
      - generate: {kind: chitchat, turns: 12, seed: 1}
      - user: "My cat is called Miso."
      - assistant: "Miso is a lovely name for a cat."
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: capital, user: "What is the capital of Freedonia?", expect: {contains: "Fredville"}}
      - {id: cat, user: "What is my cat called?", expect: {contains: "Miso"}}
"""

BASELINE = "ctxeval-baseline.json"
STRATEGIES = "--ctx-strategy=full,sliding"


def write_baseline(ctx: CtxProject, *args: str) -> dict:
    result = ctx.run(STRATEGIES, "--ctx-update-baseline", *args)
    assert result.ret == 0, output(result)
    assert f"baseline written: {ctx.path / BASELINE}" in result.stdout.str()
    return json.loads((ctx.path / BASELINE).read_text())


def edit_entry(ctx: CtxProject, probe: str, strategy: str, **changes: object) -> None:
    """Change one entry of the committed baseline, as a past run would have left it."""
    path = ctx.path / BASELINE
    data = json.loads(path.read_text())
    entries = [e for e in data["entries"] if (e["probe"], e["strategy"]) == (probe, strategy)]
    assert len(entries) == 1
    entries[0].update(changes)
    path.write_text(json.dumps(data, indent=1))


def test_update_writes_a_sorted_readable_baseline(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    data = write_baseline(ctx)
    keys = [(e["scenario"], e["strategy"], e["probe"]) for e in data["entries"]]
    assert keys == sorted(keys) and len(keys) == 6
    by = {(e["strategy"], e["probe"]): e for e in data["entries"]}
    assert by[("sliding", "launch-code")]["classification"] == "context_loss"
    assert by[("full", "capital")]["classification"] == "model_miss"
    assert by[("full", "launch-code")]["cumulative_input_tokens"] > 0
    assert data["model"] == "ctxeval/oracle" and data["version"] == 1
    # One entry per line: a moved probe is one changed line in a diff.
    text = (ctx.path / BASELINE).read_text()
    assert sum(line.startswith('    {"classification"') for line in text.splitlines()) == 6


# Two needles, a constraint and a probe that cites evidence: each probe's
# baseline entry keeps the states of its own facts only.
FACTS = """
    id: facts
    turns:
      - user: "Remember: never use the requests library."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 4, seed: 1}
    constraints:
      - {id: no-requests, at_turn: 1, text: "Never use the requests library; always use urllib3."}
    needles:
      - id: door
        depth: 0.3
        text: "The door code is 7731."
        question: "What is the door code?"
        answer: "7731"
      - {id: bus, depth: 0.6, text: "The bus leaves at 8:15.", answer: "8:15"}
    probes:
      - {id: door-code, needle: door}
      - {id: http, user: Write a function that downloads a URL., constraint: no-requests}
      - {id: trip, user: "When do I leave, and how do I get in?", evidence: [bus, door]}
      - {id: chat, user: "How are you?"}
"""


def test_each_baseline_entry_and_junit_case_keeps_the_survival_of_its_own_facts(
    ctx: CtxProject, tmp_path: Path
) -> None:
    ctx.scenario("facts", FACTS)
    junit = tmp_path / "junit.xml"
    result = ctx.run("--ctx-strategy=full", "--ctx-update-baseline", f"--junitxml={junit}")
    assert result.ret == 0, output(result)
    entries = json.loads((ctx.path / BASELINE).read_text())["entries"]
    facts = {e["probe"]: e["fact_survival"] for e in entries}
    assert facts == {
        "door-code": {"door": "verbatim"},
        "http": {"no-requests": "verbatim"},
        "trip": {"bus": "verbatim", "door": "verbatim"},
        "chat": {},
    }
    records = {r["probe"]: r for r in ctx.results()}
    assert records["chat"]["fact_survival"].keys() == {"door", "bus", "no-requests"}
    assert records["door-code"]["needle"] == "door" and records["chat"]["needle"] is None
    xml = junit.read_text()
    for probe, value in (("trip", "bus=verbatim,door=verbatim"), ("chat", "")):
        case = xml[xml.index(f'name="{probe}[full]"') :]
        case = case[: case.index("</testcase>")]
        assert f'<property name="ctxeval.fact_survival" value="{value}"' in case


def test_known_losses_do_not_fail_and_say_why(ctx: CtxProject, xdist_args: tuple[str, ...]) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "-rx", *xdist_args)
    assert result.ret == 0, output(result)
    result.assert_outcomes(passed=3, xfailed=3)
    text = output(result)
    assert "known context_loss (recorded in the baseline)" in text
    assert "gate: 0 regressions against the baseline" in text
    assert "1 known context losses" in text


def test_a_new_context_loss_fails_with_what_changed_and_how_to_look(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    edit_entry(ctx, "launch-code", "sliding", classification="ok", verdict="pass")
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", *xdist_args)
    assert result.ret == 1
    result.assert_outcomes(passed=3, failed=1, xfailed=2)
    text = output(result)
    nodeid = "scenarios/recall.yaml::recall::launch-code[sliding]"
    assert f"REGRESSED {nodeid}: ok -> context_loss" in text
    assert (
        "ctxeval show scenarios/recall.yaml --id recall --strategy sliding --probe launch-code"
    ) in text
    assert "regression against the baseline: the verdict fell: ok -> context_loss (was ok)" in text
    assert "gate exit code 1: a probe regressed" in text
    assert_no_traceback(result)


def test_a_model_miss_never_fails_the_gate(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    edit_entry(ctx, "capital", "sliding", classification="ok", verdict="pass")
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}")
    assert result.ret == 0, output(result)


def test_a_budget_rule_fails_with_its_own_exit_code(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    data = write_baseline(ctx)
    before = next(
        e["cumulative_input_tokens"]
        for e in data["entries"]
        if (e["strategy"], e["probe"]) == ("full", "cat")
    )
    for probe in ("launch-code", "capital", "cat"):
        edit_entry(ctx, probe, "full", cumulative_input_tokens=before // 2)
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "--ctx-fail-if=tokens:+10%")
    assert result.ret == 6, output(result)
    text = output(result)
    assert re.search(r"BUDGET\s+full: tokens [\d,]+ -> [\d,]+ \(\+100\.\d%; allowed \+10%\)", text)
    assert "[--ctx-fail-if tokens:+10%]" in text
    assert "sliding: tokens" not in text
    assert "gate exit code 6: a --ctx-fail-if budget rule broke" in text
    # The same run within a looser budget passes.
    assert ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "--ctx-fail-if=tokens:+150%").ret == 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--ctx-fail-if=tokens:10%", f"--ctx-baseline={BASELINE}"), "invalid rule 'tokens:10%'"),
        (("--ctx-fail-if=tokens:+10%",), "budget rules compare against a baseline"),
        (("--ctx-shard=3/2",), "--ctx-shard: invalid value '3/2'"),
        ((f"--ctx-baseline={BASELINE}",), "no such baseline; write one with --ctx-update-baseline"),
    ],
)
def test_bad_gate_options_are_one_usage_error(
    ctx: CtxProject, args: tuple[str, ...], expected: str
) -> None:
    ctx.scenario("recall", RECALL)
    result = ctx.run(STRATEGIES, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()
    assert_no_traceback(result)


def test_errors_without_regressions_have_their_own_exit_code(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    # A replay-only run of a model with no recordings: every item is an error.
    result = ctx.run(
        STRATEGIES,
        f"--ctx-baseline={BASELINE}",
        "--ctx-model=openai/gpt-4o-mini",
        "--ctx-api-base=http://127.0.0.1:9/v1",
        "--ctx-record=none",
    )
    assert result.ret == 7, output(result)
    assert "gate exit code 7: some items could not be evaluated" in output(result)


def test_new_probes_are_reported_and_unmatched_removed_ones_fail_unless_allowed(
    ctx: CtxProject,
) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    grown = RECALL.replace(
        "      - {id: cat,",
        '      - {id: name, user: "Launch code?", expect: {contains: "ZEBRA"}}\n      - {id: cat,',
    ).replace(
        '      - {id: capital, user: "What is the capital of Freedonia?", '
        'expect: {contains: "Fredville"}}\n',
        "",
    )
    ctx.scenario("recall", grown)
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}")
    text = output(result)
    assert result.ret == 9, text
    assert "2 probes not in the baseline (not gated)" in text
    assert "gate: 2 baseline probes unmatched: gone from the scenarios" in text
    assert "gate exit code 9" in text
    # name/sliding is a loss, but new: not gated; the removal is allowed.
    allowed = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "--ctx-allow-removed")
    assert allowed.ret == 0, output(allowed)
    assert "allowed by --ctx-allow-removed" in output(allowed)
    ctx.ini(pythonpath=".", ctx_allow_removed="true")
    assert ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}").ret == 0
    # Deselected with -k is not "gone".
    narrowed = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "-k", "cat")
    assert "gone from the scenarios" not in output(narrowed)


def test_update_keeps_the_entries_of_strategies_it_did_not_run(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    result = ctx.run("--ctx-strategy=sliding", "--ctx-update-baseline")
    assert result.ret == 0
    entries = json.loads((ctx.path / BASELINE).read_text())["entries"]
    assert sorted({e["strategy"] for e in entries}) == ["full", "sliding"]
    assert len(entries) == 6


def test_shards_split_the_scenarios_stably(ctx: CtxProject, xdist_args: tuple[str, ...]) -> None:
    for i in range(6):
        ctx.scenario(f"s{i}", RECALL.replace("id: recall", f"id: recall-{i}"))
    everything = set(ctx.collect_ids(STRATEGIES))
    shards = [set(ctx.collect_ids(STRATEGIES, f"--ctx-shard={k}/3")) for k in (1, 2, 3)]
    assert set().union(*shards) == everything
    assert sum(len(s) for s in shards) == len(everything)
    assert all(shards)
    # A scenario is never split: all its probes and strategies go together.
    for shard in shards:
        scenarios = {nodeid.split("::")[1] for nodeid in shard}
        assert len(shard) == 6 * len(scenarios)
    result = ctx.run(STRATEGIES, "--ctx-shard=2/3", "--ctx-fail-on=never", *xdist_args)
    ran = {r["nodeid"] for r in ctx.results()}
    assert ran == shards[1], output(result)


def test_junitxml_carries_the_outcome_as_properties(ctx: CtxProject, tmp_path: Path) -> None:
    ctx.scenario("recall", RECALL)
    junit = tmp_path / "junit.xml"
    ctx.run("--ctx-strategy=sliding", f"--junitxml={junit}", "-n", "2")
    xml = junit.read_text()
    case = xml[xml.index('name="launch-code[sliding]"') :]
    case = case[: case.index("</testcase>")]
    assert '<property name="ctxeval.classification" value="context_loss"' in case
    assert '<property name="ctxeval.fact_survival" value="' in case
    assert re.search(r'<property name="ctxeval.cumulative_input_tokens" value="\d+"', case)
    assert '<property name="ctxeval.cost_usd" value="0.000000"' in case


def _junit_properties(path: Path) -> dict[str, list[tuple[str, str]]]:
    import xml.etree.ElementTree as ET

    cases = ET.parse(path).getroot().iter("testcase")
    return {
        case.get("name", ""): [
            (p.get("name", ""), p.get("value", "")) for p in case.iter("property")
        ]
        for case in cases
    }


def test_junitxml_properties_are_the_same_with_or_without_workers(
    ctx: CtxProject, tmp_path: Path
) -> None:
    # Workers send no properties: the controller makes them from each record.
    ctx.scenario("recall", RECALL)
    serial, workers = tmp_path / "serial.xml", tmp_path / "workers.xml"
    ctx.run(STRATEGIES, f"--junitxml={serial}", "--ctx-fail-on=never")
    ctx.run(STRATEGIES, f"--junitxml={workers}", "--ctx-fail-on=never", "-n", "2")
    expected = _junit_properties(serial)
    assert len(expected) == 6
    for name, properties in expected.items():
        assert [p for p, _ in properties] == [
            "ctxeval.classification",
            "ctxeval.verdict",
            "ctxeval.strategy",
            "ctxeval.prompt_tokens",
            "ctxeval.cumulative_input_tokens",
            "ctxeval.cost_usd",
            "ctxeval.fact_survival",
        ], name
    assert _junit_properties(workers) == expected


def test_markdown_summary_is_appended(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    edit_entry(ctx, "launch-code", "sliding", classification="ok", verdict="pass")
    summary = ctx.path / "step-summary.md"
    summary.write_text("# earlier step\n")
    ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", f"--ctx-summary={summary}")
    text = summary.read_text()
    assert text.startswith("# earlier step\n## ctxeval: 6 items, 2 strategies, 1 regression")
    assert "| sliding | 1/3 | 1 | 1 | 0 |" in text
    assert "| `scenarios/recall.yaml::recall::launch-code[sliding]` | ok | context_loss |" in text


def test_a_shard_without_scenarios_succeeds_with_an_empty_results_file(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("recall", RECALL)
    ids = [set(ctx.collect_ids(STRATEGIES, f"--ctx-shard={k}/2")) for k in (1, 2)]
    empty = next(k for k in (1, 2) if not ids[k - 1])
    result = ctx.run(STRATEGIES, f"--ctx-shard={empty}/2", "--ctx-results=shard.jsonl", *xdist_args)
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert (ctx.path / "shard.jsonl").read_text() == ""
    # Without --ctx-shard, a run that selects nothing is still pytest's exit 5.
    assert ctx.run(STRATEGIES, "-k", "nothing-matches").ret == pytest.ExitCode.NO_TESTS_COLLECTED


# -- the decision table, end to end -----------------------------------------------------------

NO_EXPECTATION = RECALL.replace(
    '      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}',
    '      - {id: launch-code, user: "What is the launch code?"}',
)


def test_a_fallen_verdict_regresses_whatever_it_is_called(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("recall", NO_EXPECTATION)
    data = write_baseline(ctx)
    by = {(e["strategy"], e["probe"]): e for e in data["entries"]}
    assert by[("sliding", "launch-code")]["classification"] == "divergent"
    edit_entry(ctx, "launch-code", "sliding", classification="ok", verdict="pass", pass_rate=1.0)
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", *xdist_args)
    text = output(result)
    assert result.ret == 1, text
    assert "REGRESSED scenarios/recall.yaml::recall::launch-code[sliding]: ok -> divergent" in text
    assert "the verdict fell: ok -> divergent" in text


def test_a_beyond_context_pass_that_now_fails_regresses(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    # The full context does not fit: there is no ground truth, only the expectation.
    window = ("--ctx-strategy=sliding", "--ctx-context-window=300")
    assert ctx.run(*window, "--ctx-update-baseline").ret == 0
    data = json.loads((ctx.path / BASELINE).read_text())
    by = {(e["strategy"], e["probe"]): e for e in data["entries"]}
    assert by[("sliding", "launch-code")]["classification"] == "beyond_context", by
    assert by[("sliding", "launch-code")]["verdict"] == "fail"
    edit_entry(ctx, "launch-code", "sliding", verdict="pass", pass_rate=1.0)
    result = ctx.run(*window, f"--ctx-baseline={BASELINE}")
    text = output(result)
    assert result.ret == 1, text
    assert "beyond_context-pass -> beyond_context-fail" in text


def test_a_change_wilson_calls_not_credible_never_regresses(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx, "--ctx-repeat=3")
    edit_entry(
        ctx,
        "launch-code",
        "sliding",
        classification="unstable",
        verdict="fail",
        pass_rate=1 / 3,
        repeat=3,
    )
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", "--ctx-repeat=3", "-rx")
    text = output(result)
    assert result.ret == 0, text
    assert "gate: 0 regressions against the baseline" in text
    assert "not credible (1/3 -> 0/3" in text


def test_a_renamed_probe_is_matched_by_its_text(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    edit_entry(ctx, "launch-code", "sliding", classification="ok", verdict="pass")
    ctx.scenario(
        "recall",
        RECALL.replace("id: recall", "id: recall-v2").replace("id: launch-code", "id: code"),
    )
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", *xdist_args)
    text = output(result)
    assert result.ret == 1, text
    assert "REGRESSED scenarios/recall.yaml::recall-v2::code[sliding]: ok -> context_loss" in text
    assert (
        "renamed   scenarios/recall.yaml::recall::sliding::launch-code -> "
        "scenarios/recall.yaml::recall-v2::sliding::code (same text)"
    ) in text
    assert "unmatched" not in text
    result.assert_outcomes(passed=3, failed=1, xfailed=2)


CUSTOM_STRATEGY = """
    from pytest_ctxeval.strategies.base import BaseStrategy, Window


    class LastMessageOnly(BaseStrategy):
        name = "last-only"

        def window(self):
            return Window(messages=self.history[:1] + self.history[-1:])
"""


def test_the_show_command_the_gate_prints_works_for_a_module_class_strategy(
    ctx: CtxProject,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    xdist_args: tuple[str, ...],
) -> None:
    from pytest_ctxeval.cli import main

    ctx.write("mystrategy.py", CUSTOM_STRATEGY)
    ctx.scenario("recall", RECALL)
    strategies = "--ctx-strategy=full,mystrategy:LastMessageOnly"
    assert ctx.run(strategies, "--ctx-update-baseline").ret == 0
    edit_entry(ctx, "launch-code", "last-only", classification="ok", verdict="pass")
    result = ctx.run(strategies, f"--ctx-baseline={BASELINE}", *xdist_args)
    assert result.ret == 1, output(result)
    command = next(
        line.strip() for line in result.outlines if line.strip().startswith("ctxeval show")
    )
    assert "--strategy mystrategy:LastMessageOnly" in command
    monkeypatch.chdir(ctx.path)
    capsys.readouterr()
    assert main(command.split()[1:]) == 0, capsys.readouterr().err
    assert "What is the launch code?" in capsys.readouterr().out


# -- completeness -------------------------------------------------------------------------------


def test_a_missing_shard_is_refused_by_merge_and_by_the_gate(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ctxeval.cli import main

    for i in range(6):
        ctx.scenario(f"s{i}", RECALL.replace("id: recall", f"id: recall-{i}"))
    write_baseline(ctx)
    for k in (1, 2):
        shard = ctx.run(
            STRATEGIES,
            f"--ctx-shard={k}/2",
            "--ctx-fail-on=never",
            f"--ctx-results=reports/shard-{k}.jsonl",
        )
        assert shard.ret == 0, output(shard)
    second = len(ctx.results("reports/shard-2.jsonl"))
    assert second > 0
    monkeypatch.chdir(ctx.path)
    capsys.readouterr()

    assert main(["merge", "-o", "reports/all.jsonl", "reports/shard-1.jsonl"]) == 8
    assert "shard 2/2 missing: 1 of 2 shards have results" in capsys.readouterr().err
    twice = ["reports/shard-1.jsonl", "reports/shard-1.jsonl"]
    assert main(["merge", "-o", "reports/all.jsonl", *twice]) == 8
    assert "shard 1/2 is in both" in capsys.readouterr().err

    assert main(["gate", "reports/shard-1.jsonl", "--baseline", BASELINE]) == 8
    out = capsys.readouterr().out
    assert f"results incomplete: {second} probes of shard 2/2 missing" in out
    assert "gate exit code 8" in out

    both = ["reports/shard-1.jsonl", "reports/shard-2.jsonl"]
    assert main(["merge", "-o", "reports/all.jsonl", *both]) == 0
    assert main(["gate", "reports/all.jsonl", "--baseline", BASELINE]) == 0, capsys.readouterr()

    # A shard of another run configuration does not belong.
    other = ctx.run(
        "--ctx-strategy=full",
        "--ctx-shard=2/2",
        "--ctx-fail-on=never",
        "--ctx-results=reports/shard-2.jsonl",
    )
    assert other.ret == 0
    capsys.readouterr()
    assert main(["merge", "-o", "reports/all.jsonl", *both]) == 8
    assert "come from different runs: strategies 'full' against 'full,sliding'" in (
        capsys.readouterr().err
    )


def test_a_run_that_lacks_probes_its_scenarios_have_is_incomplete(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("recall", RECALL)
    write_baseline(ctx)
    # Something outside the plugin keeps an item from running.
    ctx.write(
        "conftest.py",
        """
        import pytest

        def pytest_runtest_setup(item):
            if item.nodeid.endswith("cat[full]"):
                pytest.skip("not today")
        """,
    )
    result = ctx.run(STRATEGIES, f"--ctx-baseline={BASELINE}", *xdist_args)
    text = output(result)
    assert result.ret == 8, text
    assert "results incomplete: 1 probe missing that the scenarios still have" in text
    assert "scenarios/recall.yaml::recall::full::cat" in text
