"""What a pytest user does out of habit works on scenario items too: --lf, --ff,
--sw, -k, -v, pasting a printed id back, tags that happen to be pytest marker
names, a worker that crashes under xdist, and failure output that shows model
text without letting it drive the terminal.

The cache plugin is on in the runs here (the project's own test runs turn it
off): --lf, --ff and --sw live in it.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import CtxProject, by_key, item_ids, output

from pytest_ctxeval.collect import format_failure
from pytest_ctxeval.report.terminal import summary_lines
from pytest_ctxeval.report.terminal_text import printable
from pytest_ctxeval.results.record import ResultRecord

# full passes "lost", sliding loses it (a context loss: the run fails);
# "impossible" is a model miss (xfail) under both.
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
STRATEGIES = "--ctx-strategy=full,sliding"
LOST_UNDER_SLIDING = "scenarios/mixed.yaml::mixed::lost[sliding]"

# A matrix gives ids with dots: grid-depth-0.1, grid-depth-0.9.
GRID = """
    id: grid
    matrix: {depth: [0.1, 0.9]}
    turns:
      - generate: {kind: chitchat, turns: 6, seed: 3}
    needles:
      - id: locker
        depth: "{{ depth }}"
        role: user
        text: "My gym locker number is 4417."
        question: What is my gym locker number?
        answer: "4417"
    probes:
      - {id: locker, needle: locker}
"""


def rerun_items(before: list[dict], after: list[dict]) -> list[str]:
    """The items a partial rerun measured anew: the results keep the earlier
    run's other items (each with its own run id), so the rerun's are the ones
    whose run id is no longer the first run's."""
    [first_run] = {r["run_id"] for r in before}
    return sorted(r["nodeid"] for r in after if r["run_id"] != first_run)


def run_with_cache(ctx: CtxProject, *args: str) -> pytest.RunResult:
    return ctx.pytester.runpytest_inprocess(*args)


def verbose_order(result: pytest.RunResult) -> list[str]:
    """Item ids in the order -v reported their outcomes."""
    pattern = re.compile(r"^(\S+::\S+) (PASSED|FAILED|XFAIL|SKIPPED|ERROR)\b")
    return [m.group(1) for line in result.outlines if (m := pattern.match(line))]


# -- the cache plugin: --lf, --ff, --sw -------------------------------------------------------


def test_last_failed_runs_only_the_failed_probe(ctx, xdist_args):
    ctx.scenario("mixed", MIXED)
    run_with_cache(ctx, STRATEGIES, *xdist_args).assert_outcomes(passed=1, failed=1, xfailed=2)
    before = ctx.results()
    again = run_with_cache(ctx, STRATEGIES, "--lf", *xdist_args)
    # (Under xdist the workers deselect, and the controller does not count them.)
    assert {k: v for k, v in again.parseoutcomes().items() if k != "deselected"} == {"failed": 1}
    # The results stay whole (a partial rerun updates its items): only one is new.
    assert len(ctx.results()) == len(before) == 4
    assert rerun_items(before, ctx.results()) == [LOST_UNDER_SLIDING]


def test_failed_first_runs_the_failed_probe_first(ctx):
    ctx.scenario("mixed", MIXED)
    first = run_with_cache(ctx, STRATEGIES, "-v")
    assert verbose_order(first)[0] == "scenarios/mixed.yaml::mixed::lost[full]"
    again = run_with_cache(ctx, STRATEGIES, "-v", "--ff")
    order = verbose_order(again)
    assert order[0] == LOST_UNDER_SLIDING
    assert sorted(order) == sorted(verbose_order(first))


def test_stepwise_stops_at_the_failure_and_resumes_there(ctx):
    ctx.scenario("mixed", MIXED)
    first = run_with_cache(ctx, STRATEGIES, "--sw")
    first.assert_outcomes(passed=1, failed=1)  # stopped: the xfails never ran
    # Fixed (here: no longer failing the run), it resumes at the failed probe.
    before = ctx.results()
    again = run_with_cache(ctx, STRATEGIES, "--sw", "--ctx-fail-on=never")
    again.assert_outcomes(passed=3, deselected=1)
    rerun = rerun_items(before, ctx.results())
    assert LOST_UNDER_SLIDING in rerun
    assert "scenarios/mixed.yaml::mixed::lost[full]" not in rerun


# -- ids: -k, -v and pasting one back -----------------------------------------------------------


def test_dash_k_selects_by_strategy_and_probe(ctx):
    ctx.scenario("mixed", MIXED)
    assert ctx.collect_ids(STRATEGIES, "-k", "sliding and lost") == [LOST_UNDER_SLIDING]
    assert ctx.collect_ids(STRATEGIES, "-k", "full") == [
        "scenarios/mixed.yaml::mixed::lost[full]",
        "scenarios/mixed.yaml::mixed::impossible[full]",
    ]


def test_verbose_shows_ids_with_dots_as_they_are_and_they_can_be_pasted_back(ctx, xdist_args):
    ctx.scenario("grid", GRID)
    deep = "scenarios/grid.yaml::grid-depth-0.9::locker[full]"
    result = ctx.run("-v", "--ctx-strategy=full", *xdist_args)
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    # Without workers "<id> PASSED", with them "[gw0] ... PASSED <id>".
    assert f"{deep} PASSED" in text or f"PASSED {deep}" in text, text
    assert "grid-depth-0::9" not in text
    before = ctx.results()
    again = ctx.run(deep, "--ctx-strategy=full", *xdist_args)
    again.assert_outcomes(passed=1)
    assert rerun_items(before, ctx.results()) == [deep]


def test_a_failure_is_headed_by_the_probe_and_where_it_is(ctx):
    ctx.scenario("mixed", MIXED)
    result = ctx.run(STRATEGIES)
    assert re.search(
        r"^_+ mixed::lost\[sliding\] \(scenarios/mixed\.yaml:7\) _+$", result.stdout.str(), re.M
    ), result.stdout.str()


# -- tags named like pytest's markers ---------------------------------------------------------

ACTING_TAGS = ["skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"]
TAGGED = """
    id: tagged
    tags: [{tags}]
    turns:
      - user: "The launch code is ZEBRA-42."
    probes:
      - {{id: launch-code, user: "What is the launch code?", expect: {{contains: "ZEBRA-42"}}}}
"""


@pytest.mark.parametrize("tag", ACTING_TAGS)
def test_a_tag_named_like_a_pytest_marker_does_not_change_how_items_run(ctx, tag):
    ctx.scenario("tagged", TAGGED.format(tags=tag))
    result = ctx.run("--ctx-strategy=full,sliding", "-m", f"tag_{tag}")
    result.assert_outcomes(passed=2)
    assert len(ctx.results()) == 2


def test_renamed_tags_work_with_strict_markers_and_say_why(ctx, xdist_args):
    ctx.scenario("tagged", TAGGED.format(tags="skip, xfail, smoke"))
    # A subprocess: in-process runs share pytest's marker registry.
    result = ctx.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        "-m",
        "tag_xfail and smoke",
        "--ctx-strategy=full",
        *xdist_args,
    )
    result.assert_outcomes(passed=1)
    markers = ctx.pytester.runpytest_subprocess("--markers", "--ctx-strategy=full").stdout.str()
    assert (
        "@pytest.mark.tag_skip: scenario tag 'skip', renamed: a 'skip' marker would change "
        "how pytest runs the items (select them with -m tag_skip)"
    ) in markers


# -- a crashed xdist worker ---------------------------------------------------------------------

CRASHING_STRATEGY = """
    import os

    from pytest_ctxeval.strategies.base import BaseStrategy


    class Crashing(BaseStrategy):
        \"\"\"Takes its worker process down, as a segfault in a native library would.\"\"\"

        name = "crashing"

        def window(self):
            os._exit(3)
"""


def test_an_item_whose_worker_crashed_gets_an_error_record(ctx):
    ctx.write("crashing.py", CRASHING_STRATEGY)  # importable via pythonpath = .
    ctx.scenario("mixed", MIXED)
    result = ctx.run("--ctx-strategy=crashing:Crashing,full", "-k", "lost", "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    records = by_key(ctx.results())
    assert set(records) == {("mixed", "crashing", "lost"), ("mixed", "full", "lost")}
    crashed = records[("mixed", "crashing", "lost")]
    assert crashed["classification"] == "error" and crashed["verdict"] == "error"
    assert crashed["nodeid"] == "scenarios/mixed.yaml::mixed::lost[crashing]"
    assert crashed["scenario_file"] == "scenarios/mixed.yaml"
    assert "crashed while running" in crashed["error"]
    assert records[("mixed", "full", "lost")]["classification"] == "ok"
    assert re.search(r"^crashing\s+passed 0/1 .* other 1 ", "\n".join(result.outlines), re.M)


def test_a_crash_while_a_scenario_was_evaluated_together_says_any_strategy_may_be_the_cause(ctx):
    # The worker evaluates the scenario under both strategies when its first
    # item (full's) asks, and crashes in the other strategy's window: full's
    # item carries the crash, and says that another strategy may have caused
    # it.  The replacement evaluates each item alone, so the crashing
    # strategy's own item then crashes by itself, and says so plainly.
    ctx.write("crashing.py", CRASHING_STRATEGY)
    ctx.scenario("mixed", MIXED)
    result = ctx.run("--ctx-strategy=full,crashing:Crashing", "-k", "lost", "-n", "2")
    result.assert_outcomes(failed=2)
    records = by_key(ctx.results())
    first = records[("mixed", "full", "lost")]["error"]
    assert "crashed while running 'scenarios/mixed.yaml::mixed::lost[full]'" in first
    assert "under every selected strategy at once, so any of them may have caused" in first
    alone = records[("mixed", "crashing", "lost")]["error"]
    assert "crashed while running 'scenarios/mixed.yaml::mixed::lost[crashing]'" in alone
    assert "any of them" not in alone
    result.stdout.fnmatch_lines(["*lost?full?*any of them may have caused the crash*"])


# -- model and scenario text in the terminal ---------------------------------------------------

# The oracle quotes the turn, so the answer carries the same characters.
ESCAPES = """
    id: escapes
    turns:
      - user: "The banner text is \\e[31mRED\\e[0m\\e[2J with a NUL\\0 here\\b
          \\e]0;owned\\a and \\u202eevil."
      - assistant: OK.
    probes:
      - {id: banner, user: "What is the banner text?", expect: {contains: GREEN}}
"""
RAW_CONTROLS = ("\x1b", "\x00", "\x07", "\x08", "\u202e")


def test_failure_output_shows_no_escape_sequences_from_model_text(ctx, xdist_args):
    ctx.scenario("escapes", ESCAPES)
    # --ctx-verbose: the full block quotes the answer (one line would not).
    result = ctx.run("--ctx-strategy=full", "--ctx-fail-on=fail", "--ctx-verbose", *xdist_args)
    result.assert_outcomes(failed=1)
    answer = ctx.results()[0]["answer"]
    assert all(c in answer for c in RAW_CONTROLS), repr(answer)  # the text does carry them
    text = output(result)
    assert not [c for c in RAW_CONTROLS if c in text]
    assert "strategy answer:     The banner text is RED with a NUL\\x00 here\\x08" in text


def test_format_failure_makes_control_characters_visible():
    record = ResultRecord(
        scenario="s",
        strategy="full",
        model="m",
        probe="p",
        verdict="error",
        classification="error",
        answer="line one\r\x1b[2Koverwritten",
        error="server said \x1b]8;;http://x\x1b\\click\x1b]8;;\x1b\\ \x00",
    )
    text = format_failure(record)
    assert "\r" not in text and "\x1b" not in text and "\x00" not in text
    assert "line one\\roverwritten" in text
    assert "server said click \\x00" in text


def test_terminal_summary_makes_control_characters_visible():
    record = ResultRecord(
        scenario="s",
        strategy="evil\x1b[2J\r",
        model="m",
        probe="p",
        verdict="pass",
        classification="ok",
    )
    lines = summary_lines([record])
    assert lines[1].startswith("evil\\r  passed 1/1")


def test_printable_keeps_text_newlines_and_tabs():
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("caf\u00e9 \u65e5\u672c") == "caf\u00e9 \u65e5\u672c"
    assert printable("\x1b[1;31mbold red\x1b[0m") == "bold red"
    assert printable("\x9b2Jgone") == "gone"
    assert printable("tab\x0bvt\x7fdel") == "tab\\x0bvt\\x7fdel"


def test_collected_ids_are_the_ids_records_carry(ctx):
    ctx.scenario("mixed", MIXED)
    result = ctx.run("--collect-only", "-q", STRATEGIES)
    assert item_ids(result) == [
        "scenarios/mixed.yaml::mixed::lost[full]",
        "scenarios/mixed.yaml::mixed::lost[sliding]",
        "scenarios/mixed.yaml::mixed::impossible[full]",
        "scenarios/mixed.yaml::mixed::impossible[sliding]",
    ]
    ctx.run(STRATEGIES)
    assert sorted(r["nodeid"] for r in ctx.results()) == sorted(item_ids(result))


@pytest.mark.parametrize("plugins", [(), ("-p", "xdist")], ids=["plain", "p-xdist"])
def test_help_works_with_the_plugin_installed(ctx, plugins):
    result = ctx.pytester.runpytest_inprocess(*plugins, "--help")
    assert result.ret == pytest.ExitCode.OK, output(result)
    text = " ".join(result.stdout.str().split())
    # A literal percent sign in a help text reaches the user as written.
    assert "'tokens:+10%,cost:+5%,headtail:pass_rate:-0.05'" in text
    assert "--ctx-allow-removed" in text
    assert "ctx_fail_if (string):" in text


def test_an_xfail_report_carries_its_reason_not_a_traceback(ctx: CtxProject) -> None:
    # pytest shows an xfail's reason; the report's long text is never shown, and
    # a traceback there would render every frame's arguments (a long conversation
    # each time: seconds per item on a LoCoMo-size file).
    ctx.scenario("mixed", MIXED)
    ctx.write(
        "conftest.py",
        """
        import json

        def pytest_runtest_logreport(report):
            if report.when == "call" and hasattr(report, "wasxfail"):
                with open("xfail-reports.jsonl", "a") as out:
                    out.write(json.dumps([report.nodeid, str(report.longrepr)]) + "\\n")
        """,
    )
    result = ctx.run("--ctx-strategy=full", "-rx")
    result.assert_outcomes(passed=1, xfailed=1)
    [(nodeid, longrepr)] = [
        json.loads(line) for line in (ctx.path / "xfail-reports.jsonl").read_text().splitlines()
    ]
    assert nodeid.endswith("::impossible[full]")
    assert longrepr.startswith("model_miss: ctxeval/oracle failed this probe")
    assert "Traceback" not in longrepr and "def " not in longrepr
    assert "model_miss: ctxeval/oracle failed this probe" in output(result)
