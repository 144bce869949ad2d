"""End-to-end runs with the deterministic oracle mock: verdicts, classifications,
failure messages, result records, fact survival, report and terminal summary.

Most tests read one shared run of a small suite per xdist mode (running it
costs two worker processes under -n 2); ``run_suite`` runs it at most once per
mode per module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import (
    BUILTIN_STRATEGIES,
    RECORD_FIELDS,
    XDIST_MODES,
    CtxProject,
    assert_no_traceback,
    by_key,
    output,
    read_jsonl,
    summary_line,
)

from pytest_ctxeval.report.page_data import drilldown_items, read_page_data

SCRIPT = "<script>alert(1)</script>"
ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"

# An early fact and an early constraint, then 12 turns of chit-chat: sliding
# (last 6 turns) drops them, every other built-in keeps them.
RECALL = """
    id: recall
    description: An early fact, then a long chat.
    system: You are a helpful assistant.
    turns:
      - user: "Before we start: the launch code is ZEBRA-42."
      - assistant: Noted, I will remember it.
      - generate: {kind: chitchat, turns: 12, seed: 1}
      - user: "My cat is called Miso."
      - assistant: "Miso is a lovely name for a cat."
    constraints:
      - {id: no-requests, at_turn: 1, text: "Never use the requests library; always use urllib3."}
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: capital, user: "What is the capital of Freedonia?", expect: {contains: "Fredville"}}
      - {id: launch-agree, user: "What is the launch code?"}
      - {id: cat-agree, user: "What is my cat called?"}
      - id: http
        user: Write a function that downloads a URL.
        constraint: no-requests
        expect: {contains: urllib3}
"""

# A needle in the middle of a long tool output, then chit-chat.
SURVIVAL = """
    id: survival
    turns:
      - user: What are the slowest spans from yesterday?
      - tool: {name: query_spans, generate: {kind: json_rows, rows: 120, seed: 7}}
      - assistant: Most spans finish quickly.
      - generate: {kind: chitchat, turns: 12, seed: 2}
    needles:
      - id: api-key
        depth: 0.6  # in the tool output, past truncate's first 6,000 characters
        text: "SPECIAL_API_KEY = 'secret-9981'"
        question: What is SPECIAL_API_KEY?
        answer: secret-9981
    probes:
      - {id: key, needle: api-key}
"""

# Markup in the description, a turn, the answer and the expectation.
ESCAPE = f"""
    id: escape
    description: "{SCRIPT} in the description"
    turns:
      - user: "The banner text is {SCRIPT} exactly."
      - assistant: OK.
    probes:
      - {{id: banner, user: "What is the banner text?", expect: {{contains: "<b>never</b>"}}}}
"""

EXPECTED: dict[tuple[str, str], dict[str, str]] = {
    # (scenario, probe) -> strategy -> classification; others default to "ok".
    ("recall", "launch-code"): {"sliding": "context_loss"},
    ("recall", "capital"): dict.fromkeys(BUILTIN_STRATEGIES, "model_miss"),
    ("recall", "launch-agree"): {"sliding": "divergent"},
    ("recall", "cat-agree"): {},
    ("recall", "http"): {"sliding": "context_loss"},
    ("survival", "key"): {"sliding": "context_loss", "truncate": "context_loss"},
    ("escape", "banner"): dict.fromkeys(BUILTIN_STRATEGIES, "model_miss"),
}


def expected_classification(scenario: str, strategy: str, probe: str) -> str:
    return EXPECTED[(scenario, probe)].get(strategy, "ok")


ALL_KEYS = sorted(
    (scenario, strategy, probe) for scenario, probe in EXPECTED for strategy in BUILTIN_STRATEGIES
)

SUITE_MODES = {**XDIST_MODES, "no-xdist-plugin": ("-p", "no:xdist")}


@dataclass
class SuiteRun:
    result: pytest.RunResult
    text: str
    records: list[dict[str, Any]]
    html: str

    def record(self, scenario: str, strategy: str, probe: str) -> dict[str, Any]:
        return by_key(self.records)[(scenario, strategy, probe)]


def write_suite(ctx: CtxProject) -> None:
    ctx.ini(pythonpath=".", ctx_strategy=",".join(BUILTIN_STRATEGIES))
    ctx.scenario("recall", RECALL)
    ctx.scenario("survival", SURVIVAL)
    ctx.scenario("escape", ESCAPE)


@pytest.fixture(scope="module")
def _suite_cache() -> dict[str, SuiteRun]:
    return {}


@pytest.fixture
def run_suite(ctx: CtxProject, _suite_cache: dict[str, SuiteRun]):
    def run(mode: str) -> SuiteRun:
        if mode not in _suite_cache:
            write_suite(ctx)
            # --ctx-verbose: the failure tests read each failed item's full block.
            result = ctx.run("-rx", "--ctx-verbose", *SUITE_MODES[mode])
            _suite_cache[mode] = SuiteRun(
                result=result,
                text=output(result),
                records=ctx.results(),
                html=(ctx.path / "reports" / "ctxeval.html").read_text(encoding="utf-8"),
            )
        return _suite_cache[mode]

    return run


@pytest.fixture(params=list(SUITE_MODES))
def suite(request: pytest.FixtureRequest, run_suite) -> SuiteRun:
    return run_suite(request.param)


def failure_section(text: str, title: str) -> str:
    """The body of one failure report, e.g. title ``recall::launch-code[sliding]``
    (the heading goes on with the probe's file and line)."""
    match = re.search(
        rf"_{{3,}} {re.escape(title)} \([^)\n]+\) _{{3,}}\n(.*?)(?=\n_{{3,}} |\n={{3,}} )",
        text,
        re.S,
    )
    assert match is not None, f"no failure section {title!r} in:\n{text}"
    return match.group(1)


# -- verdicts and classifications -------------------------------------------------------


def test_each_item_is_classified(suite):
    got = {key: r["classification"] for key, r in by_key(suite.records).items()}
    want = {key: expected_classification(*key) for key in ALL_KEYS}
    assert got == want


def test_outcomes_and_exit_code_under_the_default_gate(suite):
    # Failed: context_loss and divergent; xfailed: model_miss; the rest pass.
    counts = {"passed": 0, "failed": 0, "xfailed": 0}
    for key in ALL_KEYS:
        cls = expected_classification(*key)
        counts[{"ok": "passed", "model_miss": "xfailed"}.get(cls, "failed")] += 1
    suite.result.assert_outcomes(**counts)
    assert suite.result.ret == pytest.ExitCode.TESTS_FAILED


def test_model_miss_is_reported_as_xfail_with_a_reason(suite):
    # -rx is on for the suite runs, so the short summary shows the reason.
    assert re.search(
        r"^XFAIL scenarios/recall\.yaml::recall::capital\S*\[full\] - model_miss: "
        r"ctxeval/oracle failed this probe even with the full context",
        suite.text,
        re.M,
    ), suite.text
    record = suite.record("recall", "full", "capital")
    assert record["verdict"] == "fail"
    assert record["ground_truth_verdict"] == "fail"


def test_context_loss_failure_shows_expectation_and_both_answers(suite):
    body = failure_section(suite.text, "recall::launch-code[sliding]")
    assert "context_loss" in body
    assert re.search(r"expected:\s+\{.*\"contains\": \"ZEBRA-42\"", body)
    assert re.search(r"strategy answer:\s+I could not find that in our conversation\.", body)
    assert re.search(r"full-context answer:\s+.*the launch code is ZEBRA-42", body)
    assert "Traceback" not in body and "site-packages" not in body
    assert_no_traceback(suite.result)


def test_divergent_failure_shows_both_answers(suite):
    body = failure_section(suite.text, "recall::launch-agree[sliding]")
    assert "divergent" in body
    assert re.search(r"full-context answer:\s+.*ZEBRA-42", body)


def test_a_forgotten_constraint_is_a_context_loss(suite):
    full = suite.record("recall", "full", "http")
    sliding = suite.record("recall", "sliding", "http")
    assert "urllib3" in full["answer"]
    assert "urllib3" not in sliding["answer"]
    assert full["fact_survival"]["no-requests"] == "verbatim"
    assert sliding["fact_survival"]["no-requests"] == "gone"


# -- result records ---------------------------------------------------------------------


def test_one_record_per_item_with_every_design_field(suite):
    assert len(suite.records) == len(ALL_KEYS)
    assert sorted(by_key(suite.records)) == ALL_KEYS
    for record in suite.records:
        missing = RECORD_FIELDS - set(record)
        assert not missing, f"{record['strategy']}/{record['probe']} lacks {missing}"
        assert record["model"] == "ctxeval/oracle"
        assert record["repeat"] == 1
        assert record["error"] is None
        assert record["llm_calls"] >= 1
        assert record["prompt_tokens"] > 0
        assert record["peak_prompt_tokens"] >= record["prompt_tokens"]
        assert record["cumulative_input_tokens"] >= record["prompt_tokens"]
        assert record["verdict"] == ("pass" if record["classification"] == "ok" else "fail")


def test_records_name_the_items_that_ran(suite):
    """Under -n 2 the workers collect separately; xdist aborts if they disagree,
    and each record must carry the id pytest showed for its item."""
    assert "Different tests were collected" not in suite.text
    assert sorted(r["nodeid"] for r in suite.records) == sorted(
        f"scenarios/{scenario}.yaml::{scenario}::{probe}[{strategy}]"
        for scenario, strategy, probe in ALL_KEYS
    )


def test_one_run_id_for_the_whole_run(suite):
    run_ids = {r["run_id"] for r in suite.records}
    assert len(run_ids) == 1
    assert run_ids.pop()


def test_records_are_the_same_with_and_without_workers(run_suite):
    """Same inputs, same outputs: only run_id and timings may differ."""

    compared = (RECORD_FIELDS - {"run_id", "latency_s"}) | {"nodeid"}

    def stable(records: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        return {k: {f: r.get(f) for f in compared} for k, r in by_key(records).items()}

    plain, workers = run_suite("no-flag"), run_suite("n2")
    assert set(by_key(plain.records)) == set(by_key(workers.records)) == set(ALL_KEYS)
    assert stable(plain.records) == stable(workers.records)
    assert plain.records[0]["run_id"] != workers.records[0]["run_id"]


def test_sliding_sends_fewer_tokens_than_full(suite):
    full = suite.record("recall", "full", "launch-code")
    sliding = suite.record("recall", "sliding", "launch-code")
    assert sliding["prompt_tokens"] < full["prompt_tokens"]
    assert sliding["cumulative_input_tokens"] < full["cumulative_input_tokens"]


# -- fact survival ----------------------------------------------------------------------


def test_fact_survival_per_strategy(suite):
    survival = {s: suite.record("survival", s, "key")["fact_survival"] for s in BUILTIN_STRATEGIES}
    assert survival["full"] == {"api-key": "verbatim"}
    assert survival["sliding"] == {"api-key": "gone"}
    assert survival["headtail"] == {"api-key": "verbatim"}


def test_headtail_answers_from_memory_after_retrieving_it(suite):
    record = suite.record("survival", "headtail", "key")
    assert record["memory_retrievals"] == 1
    assert record["llm_calls"] == 2
    assert "secret-9981" in record["answer"]
    assert suite.record("survival", "full", "key")["memory_retrievals"] == 0


# -- terminal summary and report ----------------------------------------------------------


def test_terminal_summary_has_one_line_per_strategy_with_counts(suite):
    assert re.search(r"^=+ ctxeval =+$", suite.text, re.M)
    for strategy in BUILTIN_STRATEGIES:
        line = summary_line(suite.result, strategy)
        match = re.search(
            r"passed\s+(\d+)/(\d+)\s+context_loss\s+(\d+)\s+model_miss\s+(\d+)\s+other\s+(\d+)",
            line,
        )
        assert match, line
        mine = [expected_classification(*k) for k in ALL_KEYS if k[1] == strategy]
        assert [int(g) for g in match.groups()] == [
            mine.count("ok"),
            len(mine),
            mine.count("context_loss"),
            mine.count("model_miss"),
            mine.count("divergent"),
        ], line


def test_report_names_every_strategy(suite):
    for strategy in BUILTIN_STRATEGIES:
        assert f">{strategy}<" in suite.html


def test_report_escapes_scenario_and_model_text(suite):
    # The oracle quotes the turn, so the answer carries the markup too.
    assert SCRIPT in suite.record("escape", "full", "banner")["answer"]
    html = suite.html
    # The report's own two script elements and no other: no text opened or closed one.
    assert html.lower().count("<script") == 2 and html.lower().count("</script") == 2
    assert "<b>never</b>" not in html
    # Answers and expectations reach the page as embedded JSON with <, > and &
    # escaped (the drill-downs packed as base64), which the page's script
    # shows as text; unpacked, they read exactly as recorded.
    data = re.search(r'<script type="application/json" id="ctx-data">(.*?)</script>', html, re.S)
    assert data and "<" not in data.group(1) and ">" not in data.group(1)
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in data.group(1)  # a row's answer
    ((banner, chunk),) = [
        (i, chunk)
        for i, chunk in drilldown_items(read_page_data(html))
        if (i["scenario"], i["strategy"], i["probe"]) == ("escape", "full", "banner")
    ]
    assert chunk["texts"][banner["answer"]] == suite.record("escape", "full", "banner")["answer"]
    assert banner["expected"] == {"contains": "<b>never</b>"}


# -- runs of their own ---------------------------------------------------------------------

MIXED = """
    id: mixed
    turns:
      - user: "Before we start: the launch code is ZEBRA-42."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 12, seed: 1}
    probes:
      - {id: lost, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: impossible, user: "What is the capital of Freedonia?", expect: {contains: Fredville}}
"""


GATES = {
    # full/lost passes; sliding/lost is a context loss; both "impossible" are model misses.
    "context_loss": ({"passed": 1, "failed": 1, "xfailed": 2}, pytest.ExitCode.TESTS_FAILED),
    "fail": ({"passed": 1, "failed": 3}, pytest.ExitCode.TESTS_FAILED),
    "never": ({"passed": 4}, pytest.ExitCode.OK),
}


def gate_cases() -> list[Any]:
    # The default gate runs in every mode in the suite above; here only in-process.
    return [
        pytest.param(fail_on, mode, id=f"{fail_on}-{mode}")
        for fail_on in GATES
        for mode in XDIST_MODES
        if not (fail_on == "context_loss" and mode == "n2")
    ]


@pytest.mark.parametrize("fail_on, mode", gate_cases())
def test_fail_on_decides_what_fails_the_run(ctx, fail_on, mode):
    outcomes, ret = GATES[fail_on]
    xdist_args = XDIST_MODES[mode]
    ctx.scenario("mixed", MIXED)
    result = ctx.run("--ctx-strategy=full,sliding", f"--ctx-fail-on={fail_on}", *xdist_args)
    result.assert_outcomes(**outcomes)
    assert result.ret == ret
    # The gate changes outcomes, never the classification.
    got = {(r["strategy"], r["probe"]): r["classification"] for r in ctx.results()}
    assert got == {
        ("full", "lost"): "ok",
        ("sliding", "lost"): "context_loss",
        ("full", "impossible"): "model_miss",
        ("sliding", "impossible"): "model_miss",
    }


def test_fail_on_from_the_ini_and_the_option_wins(ctx):
    ctx.ini(pythonpath=".", ctx_fail_on="never", ctx_strategy="full,sliding")
    ctx.scenario("mixed", MIXED)
    ctx.run().assert_outcomes(passed=4)
    ctx.run("--ctx-fail-on=fail").assert_outcomes(passed=1, failed=3)


def test_output_paths_are_honoured(ctx, xdist_args):
    ctx.scenario("mixed", MIXED)
    result = ctx.run(
        "--ctx-strategy=full,sliding",
        "--ctx-results=out/run.jsonl",
        "--ctx-report=out/html/run.html",
        *xdist_args,
    )
    result.assert_outcomes(passed=1, failed=1, xfailed=2)
    assert not (ctx.path / "reports").exists()
    records = read_jsonl(ctx.path / "out" / "run.jsonl")
    assert len(records) == 4
    html = (ctx.path / "out" / "html" / "run.html").read_text(encoding="utf-8")
    assert ">full<" in html and ">sliding<" in html
    assert str(ctx.path / "out" / "run.jsonl") in result.stdout.str()
    assert str(ctx.path / "out" / "html" / "run.html") in result.stdout.str()


def test_plain_tests_write_no_results_or_report(ctx, xdist_args):
    ctx.write("test_x.py", "def test_one():\n    assert True\n")
    ctx.write("config/settings.yaml", "debug: true\n")  # YAML, but not a scenario
    result = ctx.run(*xdist_args)
    result.assert_outcomes(passed=1)
    assert not (ctx.path / "reports").exists()
    assert not re.search(r"^=+ ctxeval =+$", result.stdout.str(), re.M)
    assert "results.jsonl" not in result.stdout.str()
