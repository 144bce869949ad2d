"""--ctx-sweep (every probe also asked at earlier turns: the forgetting curve
and the constraint-violation rate over turns) and --ctx-budget (each budgeted
strategy once per token budget), end to end on the oracle mock."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CtxProject, assert_no_traceback, by_key, output

from pytest_ctxeval.report.sweeps import (
    BudgetRow,
    forgetting_curves,
    sweep_summary_lines,
    violation_curves,
)
from pytest_ctxeval.results.record import ResultRecord

# Ten user turns: the launch code and the no-requests rule are said in user
# turn 2 (message 3), then eight turns of chit-chat.  sliding(turns=3) keeps
# (the probe's turn and the two before it) keeps them while they are among the
# last two turns said, so a probe asked as turn 4 still finds them and one
# asked as turn 6 or later does not.
RECALL = """
    id: recall
    system: You are a helpful assistant.
    turns:
      - user: Hello there.
      - assistant: Hi, how can I help?
      - user: Let us plan the launch.
      - assistant: Noted, I will remember it.
      - generate: {kind: chitchat, turns: 8, seed: 1}
    needles:
      - id: code
        turn: 3
        text: "The launch code is ZEBRA-42."
        question: What is the launch code?
        answer: ZEBRA-42
    constraints:
      - {id: no-requests, at_turn: 3, text: "Never use the requests library; always use urllib3."}
    probes:
      - {id: code, needle: code}
      - id: http
        user: Write a function that downloads a URL.
        constraint: no-requests
        expect: {contains: urllib3}
"""

STRATEGIES = "full,sliding(turns=3)"
SLIDING = "sliding[turns:3]"

# A strategy with a token budget: the newest whole turns that fit, and the
# system prompt.  Each instance built appends a line to built.txt.
KEEP_LAST = """
from pathlib import Path

from pytest_ctxeval.strategies.base import BaseStrategy, Window, split_system


class KeepLast(BaseStrategy):
    name = "keeplast"

    def __init__(self, budget_tokens: int | None = None) -> None:
        super().__init__()
        if budget_tokens is not None and budget_tokens < 10:
            raise ValueError(f"budget_tokens must be >= 10, got {budget_tokens}")
        self.budget_tokens = budget_tokens
        with Path(__file__).with_name("built.txt").open("a") as fh:
            fh.write(f"{budget_tokens}\\n")

    def window(self) -> Window:
        system, rest = split_system(self.history)
        if self.budget_tokens is None:
            return Window(system + rest)
        kept, used = [], 0
        for message in reversed(rest):
            used += self.count_tokens(message.get("content") or "")
            if used > self.budget_tokens and kept:
                break
            kept.insert(0, message)
        while len(kept) > 1 and kept[0]["role"] != "user":
            kept.pop(0)
        return Window(system + kept)
"""


def sweep_project(ctx: CtxProject, **ini: str) -> CtxProject:
    ctx.ini(pythonpath=".", ctx_strategy=STRATEGIES, ctx_fail_on="never", **ini)
    ctx.scenario("recall", RECALL)
    return ctx


def budget_project(ctx: CtxProject) -> CtxProject:
    ctx.ini(pythonpath=".", ctx_strategy="budgeted:KeepLast,sliding", ctx_fail_on="never")
    ctx.write("budgeted.py", KEEP_LAST)
    ctx.scenario("recall", RECALL)
    return ctx


def summary_lines_after(result: pytest.RunResult, title: str) -> list[str]:
    """The terminal-summary lines that follow the line starting with ``title``."""
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    return lines[start + 1 :]


# --- --ctx-sweep ------------------------------------------------------------


def test_sweep_off_by_default_asks_each_probe_once_as_the_turn_after_the_session(ctx):
    sweep_project(ctx)
    assert not any("@turn-" in i for i in ctx.collect_ids())
    result = ctx.run()
    records = ctx.results()
    assert len(records) == 4
    # Ten user turns: the probe is the eleventh.
    assert {r["probe_turn"] for r in records} == {11}
    assert "forgetting curve" not in output(result)


def test_sweep_items_skip_turns_before_the_fact_is_said_and_can_be_selected_with_k(ctx):
    sweep_project(ctx)
    ids = ctx.collect_ids("--ctx-sweep=2")
    code = [i.split("::")[-1] for i in ids if "::code" in i and SLIDING in i]
    # Turn 2 is where the code is said: a probe asked as turn 2 could not know it.
    assert code == [f"code@turn-{t}[{SLIDING}]" for t in (4, 6, 8, 10)] + [f"code[{SLIDING}]"]
    assert len(ids) == 2 * 2 * 5

    selected = ctx.collect_ids("--ctx-sweep=2", "-k", "turn-6")
    assert sorted(i.split("::")[-1] for i in selected) == [
        "code@turn-6[full]",
        f"code@turn-6[{SLIDING}]",
        "http@turn-6[full]",
        f"http@turn-6[{SLIDING}]",
    ]


def test_the_flag_alone_or_true_in_the_ini_sweeps_every_turn(ctx):
    sweep_project(ctx)
    alone = ctx.collect_ids("--ctx-strategy=full", "--ctx-sweep")
    turns = sorted(int(m) for i in alone for m in re.findall(r"code@turn-(\d+)", i))
    assert turns == list(range(3, 11))
    sweep_project(ctx, ctx_sweep="true")
    assert ctx.collect_ids("--ctx-strategy=full") == alone
    sweep_project(ctx, ctx_sweep="off")
    assert not any("@turn-" in i for i in ctx.collect_ids("--ctx-strategy=full"))


def test_sweep_gives_the_forgetting_curve_and_constraint_violations(ctx, xdist_args):
    sweep_project(ctx)
    result = ctx.run("--ctx-sweep=2", *xdist_args)
    assert_no_traceback(result)
    records = by_key(ctx.results())
    assert len(records) == 20
    sliding = {p: records[("recall", SLIDING, p)] for p in ("code@turn-4", "code@turn-6", "code")}
    assert [r["probe_turn"] for r in sliding.values()] == [4, 6, 11]
    assert [r["classification"] for r in sliding.values()] == ["ok", "context_loss", "context_loss"]
    assert sliding["code@turn-4"]["fact_survival"]["code"] == "verbatim"
    # The ground truth at a sweep point is the session up to it, not the whole session.
    full_tokens = [r["full_prompt_tokens"] for r in sliding.values()]
    assert full_tokens == sorted(full_tokens) and len(set(full_tokens)) == 3
    assert all(records[("recall", "full", p)]["classification"] == "ok" for p in sliding)
    assert records[("recall", SLIDING, "http@turn-4")]["verdict"] == "pass"
    assert records[("recall", SLIDING, "http@turn-8")]["verdict"] == "fail"

    curve = summary_lines_after(result, "forgetting curve")
    full_line = next(line for line in curve if line.startswith("full "))
    sliding_line = next(line for line in curve if line.startswith(SLIDING))
    assert re.search(r"turn 4 100% \S+ turn 11 100%", full_line), full_line
    assert re.search(r"turn 4 100% \S+ turn 11 0%", sliding_line), sliding_line
    violations = summary_lines_after(result, "constraint violations")
    sliding_violations = next(line for line in violations if line.startswith(SLIDING))
    assert re.search(r"turn 4 +0% \S+ turn 11 100%", sliding_violations), sliding_violations
    report = (ctx.path / "reports" / "ctxeval.html").read_text(encoding="utf-8")
    assert 'id="chart-forgetting"' in report and 'id="chart-violations"' in report


def test_sweep_forks_the_one_simulation_instead_of_simulating_each_point(ctx):
    ctx.ini(pythonpath=".", ctx_strategy="budgeted:KeepLast", ctx_fail_on="never")
    ctx.write("budgeted.py", KEEP_LAST)
    ctx.scenario("recall", RECALL)
    result = ctx.run("--ctx-sweep")
    assert result.ret == pytest.ExitCode.OK, output(result)
    assert len(ctx.results()) == 2 * 9
    # One strategy built for the one simulated session; the sweep points are forks of it.
    assert (ctx.path / "built.txt").read_text().splitlines() == ["None"]


@pytest.mark.parametrize("value", ["0", "every", "-2"])
def test_a_bad_sweep_value_is_one_usage_error_naming_the_option_and_value(ctx, value):
    sweep_project(ctx)
    result = ctx.run(f"--ctx-sweep={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--ctx-sweep: invalid value {value!r}" in output(result)
    assert_no_traceback(result)


# --- --ctx-budget -----------------------------------------------------------


def test_budget_runs_each_budgeted_strategy_per_budget_and_finds_the_smallest(ctx, xdist_args):
    budget_project(ctx)
    ids = ctx.collect_ids("--ctx-budget=100000,30")
    assert sorted(i.split("::")[-1] for i in ids if "::code[" in i) == [
        "code[keeplast[budget_tokens:100000]]",
        "code[keeplast[budget_tokens:30]]",
        "code[sliding]",
    ]
    result = ctx.run("--ctx-budget=100000,30", "--ctx-summary=summary.md", *xdist_args)
    assert_no_traceback(result)
    records = by_key(ctx.results())
    assert records[("recall", "keeplast[budget_tokens:30]", "code")]["budget"] == 30
    assert records[("recall", "keeplast[budget_tokens:30]", "code")]["verdict"] == "fail"
    assert records[("recall", "keeplast[budget_tokens:100000]", "code")]["verdict"] == "pass"
    assert records[("recall", "sliding", "code")]["budget"] is None

    budgets = summary_lines_after(result, "budgets:")
    assert re.match(r"keeplast +smallest 100,000 +30: 0/2 +100,000: 2/2$", budgets[0]), budgets
    text = output(result)
    # Said once for the run, not once per item.
    note = "--ctx-budget: sliding takes no budget_tokens parameter; it ran once"
    assert text.count(note) == 1
    report = (ctx.path / "reports" / "ctxeval.html").read_text(encoding="utf-8")
    assert 'id="budgets"' in report
    assert "| keeplast | 100,000 | 0/2 | 2/2 |" in (ctx.path / "summary.md").read_text()


def test_no_budget_passes_everything_says_so(ctx):
    budget_project(ctx)
    result = ctx.run("--ctx-budget=20,30")
    budgets = summary_lines_after(result, "budgets:")
    assert budgets[0].startswith("keeplast  smallest none of the budgets  20: 0/2  30: 0/2")


@pytest.mark.parametrize("value", ["abc", "0", "1000,,2000", "2k"])
def test_a_bad_budget_is_one_usage_error_naming_the_option_and_value(ctx, value):
    budget_project(ctx)
    result = ctx.run(f"--ctx-budget={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--ctx-budget: invalid value {value!r}" in output(result)
    assert_no_traceback(result)


def test_a_budget_the_strategy_rejects_is_a_usage_error_naming_the_option(ctx):
    budget_project(ctx)
    result = ctx.run("--ctx-budget=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "--ctx-budget:" in text and "budget_tokens must be >= 10, got 5" in text
    assert_no_traceback(result)


# --- the summaries from records ----------------------------------------------


def _record(strategy: str, probe: str, turn: int, verdict: str, **kw: object) -> ResultRecord:
    classification = "ok" if verdict == "pass" else "context_loss"
    return ResultRecord(
        scenario="s",
        strategy=strategy,
        model="m",
        probe=probe,
        probe_turn=turn,
        verdict=verdict,  # type: ignore[arg-type]
        classification=kw.pop("classification", classification),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def test_errors_are_left_out_of_the_forgetting_curve():
    records = [
        _record("a", "p@turn-2", 2, "pass"),
        _record("a", "p@turn-4", 4, "fail"),
        _record("a", "q@turn-4", 4, "error", classification="error"),
        _record("a", "p", 5, "pass"),
    ]
    curve = forgetting_curves(records)["a"]
    assert [(p.turn, p.hits, p.total) for p in curve] == [(2, 1, 1), (4, 0, 1), (5, 1, 1)]


def test_a_model_miss_does_not_keep_a_budget_from_passing_everything():
    row = BudgetRow("s", by_budget={100: (1, 2), 200: (2, 2)}, items={100: 2, 200: 2})
    assert row.smallest_passing == 200
    records = [
        _record("s[budget_tokens:100]", "p", 3, "fail", budget=100, classification="model_miss"),
        _record("s[budget_tokens:100]", "q", 3, "pass", budget=100),
    ]
    lines = sweep_summary_lines(records)
    assert lines == [
        "budgets: smallest that passes everything; pass rate per budget",
        "s  smallest 100  100: 2/2",
    ]


# Two chats: the code is said in the first; the second starts at user turn 3.
TWO_CHATS = """
    id: two-chats
    sessions:
      - turns:
          - user: "Remember this: the launch code is ZEBRA-42."
          - assistant: Noted.
          - user: Thanks for that.
          - assistant: You are welcome.
      - turns:
          - user: Hello again, a new week.
          - assistant: Welcome back!
          - user: The weather is fine today.
          - assistant: Glad to hear it.
    probes:
      - {id: code, user: "What is the launch code?", expect: {contains: ZEBRA-42}}
"""


def test_a_probe_asked_as_a_new_chats_first_turn_is_asked_in_the_new_chat(ctx):
    ctx.ini(pythonpath=".", ctx_strategy="full,sliding", ctx_fail_on="never")
    ctx.scenario("two-chats", TWO_CHATS)
    ctx.run("--ctx-sweep")
    records = by_key(ctx.results())
    # sliding starts each chat empty: in the second chat the code is gone.
    at = {
        p: records[("two-chats", "sliding", p)]["verdict"] for p in ("code@turn-2", "code@turn-3")
    }
    assert at == {"code@turn-2": "pass", "code@turn-3": "fail"}
    assert records[("two-chats", "full", "code@turn-3")]["verdict"] == "pass"


def test_an_item_whose_worker_crashed_keeps_its_probe_turn(tmp_path):
    from conftest import plain_session

    session = plain_session(tmp_path)
    swept = session.add_crash_record("scenarios/s.yaml::s::code@turn-4[full]", "worker died")
    plain = session.add_crash_record("scenarios/s.yaml::s::code[full]", "worker died")
    assert (swept.probe, swept.probe_turn) == ("code@turn-4", 4)
    assert (plain.probe, plain.probe_turn) == ("code", None)


def test_a_strategy_named_with_and_without_a_budget_runs_once_per_budget(ctx):
    budget_project(ctx)
    ids = ctx.collect_ids(
        "--ctx-strategy=budgeted:KeepLast,budgeted:KeepLast(budget_tokens=900)",
        "--ctx-budget=50",
    )
    assert [i.split("::")[-1] for i in ids if "::code[" in i] == [
        "code[keeplast[budget_tokens:50]]"
    ]


# The session's answer is said in user turn 3 and cited as the probe's
# evidence (as imported datasets cite it), with no needle of its own.
CITED = """
    id: cited
    turns:
      - user: Hello there.
      - assistant: Hi.
      - user: How are you?
      - assistant: Fine.
      - user: ""
      - assistant: Noted.
      - user: Anything else?
      - assistant: No.
      - user: Bye for now.
      - assistant: Bye.
    needles:
      - {id: evidence-d1-5, text: "My puppy is called Oliver.", turn: 5}
    probes:
      - id: pup
        user: What is my puppy called?
        expect: {contains: Oliver}
        evidence: [evidence-d1-5]
"""


def test_a_probe_citing_evidence_is_swept_only_after_its_evidence_is_said(ctx):
    ctx.ini(pythonpath=".", ctx_strategy="full", ctx_fail_on="never")
    ctx.scenario("cited", CITED)
    ids = [i.split("::")[-1] for i in ctx.collect_ids("--ctx-sweep")]
    # The evidence is in user turn 3: asked as turn 2 or 3 the probe could not know it.
    assert ids == ["pup@turn-4[full]", "pup@turn-5[full]", "pup[full]"]


def test_the_forgetting_curve_counts_a_model_miss_as_the_budget_table_does():
    miss = {"classification": "model_miss"}
    records = [
        _record("a", "p@turn-2", 2, "fail", **miss),
        _record("a", "q@turn-2", 2, "pass"),
        _record("a", "p", 3, "fail", constraint="rule", **miss),
    ]
    curve = forgetting_curves(records)["a"]
    assert [(p.turn, p.hits, p.total) for p in curve] == [(2, 2, 2), (3, 1, 1)]
    violations = violation_curves(records)["a"]
    assert [(p.turn, p.hits, p.total) for p in violations] == [(3, 0, 1)]


def test_an_uncheckable_item_does_not_keep_a_budget_from_passing_everything():
    records = [
        _record("s[budget_tokens:100]", "p", 3, "error", budget=100, classification="uncheckable"),
        _record("s[budget_tokens:100]", "q", 3, "pass", budget=100),
    ]
    assert sweep_summary_lines(records)[1] == "s  smallest 100  100: 1/1"


DOCS = Path(__file__).parent.parent / "docs" / "sweeps.md"
BUNDLED = Path(__file__).parent.parent / "scenarios"


@pytest.mark.parametrize(
    ("options", "first"),
    [
        (("--ctx-sweep=5", "--ctx-strategy=full,headtail,sliding,summarize"), "forgetting curve"),
        (
            (
                "--ctx-budget=250,500,1000,2000",
                "--ctx-strategy=summarize,compaction,toolprune,headtail",
            ),
            "budgets:",
        ),
    ],
)
def test_the_figures_in_docs_sweeps_are_what_the_run_prints(ctx, options, first):
    for name in ("needle-middle-30", "early-constraint"):
        ctx.scenario(name, (BUNDLED / f"{name}.yaml").read_text(encoding="utf-8"))
    result = ctx.run("scenarios/needle-middle-30.yaml", "scenarios/early-constraint.yaml", *options)
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    printed = []
    for line in lines[start:]:
        if line.startswith(("results:", "report:")):
            break
        printed.append(line)
    docs = DOCS.read_text(encoding="utf-8")
    assert "\n".join(printed) in docs
