"""What a run shows while it runs: the progress line (--ctx-progress), the
stop after N context losses (--ctx-max-failures) and failed items one line
each (the block under -v or --ctx-verbose)."""

from __future__ import annotations

import re

import pytest
from conftest import CtxProject, output
from test_gate import RECALL

from pytest_ctxeval.live.progress import Pacer, Progress, duration, progress_line
from pytest_ctxeval.llm.call_meter import CallCounts

# Three scenarios of three probes; under full,sliding: 18 items.  sliding
# loses launch-code in each (a context loss), full passes it.
ITEMS = 18
PROGRESS = re.compile(
    r"^ctxeval: (?P<done>\d+)/(?P<total>\d+) items, (?P<calls>[\d,]+) model calls "
    r"\((?P<flight>\d+) in flight\), (?P<tokens>[\d,]+) tokens, \$(?P<cost>[\d.]+), "
    r"elapsed (?P<elapsed>\S+), ETA (?P<eta>\S+)$"
)


@pytest.fixture
def project(ctx: CtxProject) -> CtxProject:
    for i in range(3):
        # Each its own system prompt: no two scenarios share a request.
        text = RECALL.replace("id: recall", f"id: recall-{i}")
        ctx.scenario(f"s{i}", text.replace("helpful assistant.", f"helpful assistant ({i})."))
    return ctx


def progress_lines(result: pytest.RunResult) -> list[re.Match[str]]:
    return [m for line in result.outlines if (m := PROGRESS.match(line))]


# -- progress ---------------------------------------------------------------------


def test_plain_progress_lines_count_items_calls_and_tokens(project: CtxProject) -> None:
    result = project.run(
        "--ctx-strategy=full,sliding", "--ctx-progress=on", "--ctx-progress-every=0"
    )
    lines = progress_lines(result)
    # A line after every item (every 0 s), in order, of a known total.
    assert [int(m["done"]) for m in lines] == list(range(1, ITEMS + 1)), output(result)
    assert {int(m["total"]) for m in lines} == {ITEMS}
    last = lines[-1]
    # Every call has come back; calls and tokens only grow.
    assert int(last["flight"]) == 0
    calls = [int(m["calls"].replace(",", "")) for m in lines]
    tokens = [int(m["tokens"].replace(",", "")) for m in lines]
    assert calls == sorted(calls) and tokens == sorted(tokens)
    # One call per item: full's answers are the ground truth, sliding's windows
    # differ from full's; the mock model answers in tokens, at no cost.
    assert calls[-1] == ITEMS
    assert tokens[-1] > 0
    assert last["eta"] == "0s" and float(last["cost"]) == 0.0


def test_the_calls_of_the_workers_add_up_under_xdist(project: CtxProject) -> None:
    result = project.run(
        "--ctx-strategy=full,sliding", "--ctx-progress=on", "--ctx-progress-every=0", "-n", "2"
    )
    lines = progress_lines(result)
    assert [int(m["done"]) for m in lines] == list(range(1, ITEMS + 1)), output(result)
    alone = progress_lines(
        project.run("--ctx-strategy=full,sliding", "--ctx-progress=on", "--ctx-progress-every=0")
    )
    # The same calls and tokens in all, whichever worker made them.
    assert (lines[-1]["calls"], lines[-1]["tokens"]) == (alone[-1]["calls"], alone[-1]["tokens"])


@pytest.mark.parametrize("setting", [("--ctx-progress=off",), ()])
def test_no_progress_line_when_off_or_when_not_due(project: CtxProject, setting) -> None:
    # Off; or auto off a terminal, where a line is due every 30 s only.
    result = project.run("--ctx-strategy=full,sliding", "--ctx-progress-every=0", *setting)
    if setting:
        assert progress_lines(result) == []
    result = project.run("--ctx-strategy=full,sliding", *setting)
    assert progress_lines(result) == []
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_ini_turns_progress_on(project: CtxProject) -> None:
    project.ini(pythonpath=".", ctx_progress="on", ctx_progress_every="0")
    assert len(progress_lines(project.run("--ctx-strategy=full"))) == ITEMS // 2


def test_a_run_without_scenarios_shows_no_progress(ctx: CtxProject) -> None:
    ctx.write("test_plain.py", "def test_one():\n    pass\n")
    result = ctx.run("--ctx-progress=on", "--ctx-progress-every=0")
    assert result.ret == 0 and progress_lines(result) == []


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        (
            "--ctx-progress=loud",
            "--ctx-progress: invalid value 'loud'; expected one of: auto, on, off",
        ),
        ("--ctx-progress-every=-1", "--ctx-progress-every: invalid value '-1'"),
        ("--ctx-max-failures=two", "--ctx-max-failures: invalid value 'two'"),
    ],
)
def test_bad_values_are_usage_errors(project: CtxProject, flag: str, expected: str) -> None:
    result = project.run(flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in output(result)


def test_the_line_and_its_eta() -> None:
    counts = CallCounts(started=12, finished=10, planned=40, tokens=45210, cost_usd=0.0123)
    line = progress_line(Progress(done=10, total=40, calls=counts, elapsed_s=65))
    assert line == (
        "ctxeval: 10/40 items, 10 model calls (2 in flight), 45,210 tokens, $0.0123, "
        "elapsed 1m05s, ETA 3m15s"
    )
    assert progress_line(Progress(0, 40, CallCounts(), 3)).endswith("elapsed 3s, ETA -")
    assert duration(7384) == "2h03m"


def test_a_plain_line_is_due_every_period_of_the_clock() -> None:
    now = [100.0]
    pacer = Pacer(30, lambda: now[0])
    due = []
    for t in (110, 129.9, 130, 140, 161):
        now[0] = t
        due.append(pacer.due())
    assert due == [False, False, True, False, True]


# -- --ctx-max-failures --------------------------------------------------------------


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_max_failures_stops_the_run_and_still_writes_what_ran(
    project: CtxProject, xdist: tuple[str, ...]
) -> None:
    result = project.run("--ctx-strategy=full,sliding", "--ctx-max-failures=2", *xdist)
    text = output(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, text
    assert "stopped after 2 context losses (--ctx-max-failures)" in text
    records = project.results()
    losses = [r for r in records if r["classification"] == "context_loss"]
    assert len(losses) >= 2
    if not xdist:
        # Stopped early: not every item ran (3 losses in all, 18 items).  Under
        # xdist the workers may have run the rest before the stop reached them.
        assert len(records) < ITEMS, text
    assert (project.path / "reports" / "ctxeval.html").is_file()


def test_max_failures_above_the_losses_changes_nothing(project: CtxProject) -> None:
    result = project.run("--ctx-strategy=full,sliding", "--ctx-max-failures=4")
    assert len(project.results()) == ITEMS
    assert "--ctx-max-failures" not in output(result)


# -- one line per failure --------------------------------------------------------------


def test_a_failed_item_is_one_line_naming_the_show_command(project: CtxProject) -> None:
    result = project.run("--ctx-strategy=full,sliding", "-k", "recall-0")
    text = output(result)
    assert (
        "context_loss: probe launch-code under sliding; see: ctxeval show scenarios/s0.yaml "
        "--id recall-0 --strategy sliding --probe launch-code"
    ) in text
    assert "strategy answer:" not in text and "full-context answer:" not in text


@pytest.mark.parametrize("flag", ["-v", "--ctx-verbose"])
def test_verbose_gives_the_block(project: CtxProject, flag: str) -> None:
    text = output(project.run("--ctx-strategy=full,sliding", "-k", "recall-0", flag))
    assert re.search(r"strategy answer:\s+I could not find that", text), text
    assert "full-context answer:" in text
