"""Where a run writes is checked before its first model call: an output that
cannot be written is a usage error naming the option and the path.  And the
results file and the report on disk always belong to the same run."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import CtxProject, assert_no_traceback, output, read_jsonl
from fake_openai_server import FakeOpenAIServer

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def real_model(server: FakeOpenAIServer) -> tuple[str, ...]:
    """A real model behind a local fake server, so a model call would be seen."""
    return ("--ctx-model=openai/test-model", f"--ctx-api-base={server.url}")


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    """Makes a directory unwritable, even for root, and undoes it afterwards."""
    locked: list[Path] = []

    def lock(path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            # Root writes through permission bits; not through the immutable flag.
            if shutil.which("chattr") is None:
                pytest.skip("running as root without chattr: no way to make a read-only dir")
            done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
            if done.returncode != 0:
                pytest.skip(f"chattr +i failed: {done.stderr.decode().strip()}")
        else:
            path.chmod(0o555)
        locked.append(path)
        assert not os.access(path, os.W_OK)

    yield lock
    for path in locked:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o755)


def nothing_to_prepare(ctx: CtxProject, lock: Callable[[Path], None]) -> None:
    pass


def write_notes(ctx: CtxProject, lock: Callable[[Path], None]) -> None:
    ctx.write("notes.txt", "my notes\n")


def make_out_dir(ctx: CtxProject, lock: Callable[[Path], None]) -> None:
    (ctx.path / "out").mkdir()


def lock_a_dir(ctx: CtxProject, lock: Callable[[Path], None]) -> None:
    lock(ctx.path / "locked")


@dataclass(frozen=True)
class BadOutput:
    id: str
    args: tuple[str, ...]
    option: str  # the option the error names
    path: str  # the path it names, relative to the project
    says: str  # what it says is wrong
    prepare: Callable[[CtxProject, Callable[[Path], None]], None] = nothing_to_prepare


BAD_OUTPUTS = [
    BadOutput(
        "results-in-a-read-only-dir",
        ("--ctx-results=locked/results.jsonl",),
        "--ctx-results",
        "locked/results.jsonl",
        "directory {root}/locked is not writable",
        prepare=lock_a_dir,
    ),
    BadOutput(
        "report-under-a-regular-file",
        ("--ctx-report=notes.txt/report.html",),
        "--ctx-report",
        "notes.txt/report.html",
        "{root}/notes.txt is a file, not a directory",
        prepare=write_notes,
    ),
    BadOutput(
        "results-is-a-directory",
        ("--ctx-results=out",),
        "--ctx-results",
        "out",
        "it is a directory; expected a file path",
        prepare=make_out_dir,
    ),
    BadOutput(
        "report-is-the-results-file",
        ("--ctx-results=out/run.txt", "--ctx-report=out/run.txt"),
        "--ctx-report",
        "out/run.txt",
        "is also where --ctx-results writes",
    ),
    BadOutput(
        "cassettes-is-a-file",
        ("--ctx-cassettes=notes.txt",),
        "--ctx-cassettes",
        "notes.txt",
        "it is a file; expected a directory",
        prepare=write_notes,
    ),
    BadOutput(
        "cassettes-in-a-read-only-dir",
        ("--ctx-cassettes=locked/cassettes",),
        "--ctx-cassettes",
        "locked/cassettes",
        "directory {root}/locked is not writable",
        prepare=lock_a_dir,
    ),
]


def assert_usage_error_before_any_call(
    ctx: CtxProject, server: FakeOpenAIServer, result: pytest.RunResult, bad: BadOutput
) -> None:
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    expected = f"{bad.option}: "
    lines = [line for line in text.splitlines() if expected in line]
    assert lines, text
    assert str(ctx.path / bad.path) in lines[0]
    assert bad.says.format(root=ctx.path) in lines[0]
    assert_no_traceback(result)
    assert server.chat_requests == []
    assert not (ctx.path / "reports" / "results.jsonl").exists()


@pytest.mark.parametrize("bad", BAD_OUTPUTS, ids=[b.id for b in BAD_OUTPUTS])
def test_an_unwritable_output_is_a_usage_error_before_any_model_call(ctx, server, read_only, bad):
    bad.prepare(ctx, read_only)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *real_model(server), *bad.args)
    assert_usage_error_before_any_call(ctx, server, result, bad)


@pytest.mark.parametrize("mode", [("-n", "0"), ("-n", "2")], ids=["n0", "n2"])
@pytest.mark.parametrize("bad", BAD_OUTPUTS[:2], ids=[b.id for b in BAD_OUTPUTS[:2]])
def test_outputs_are_checked_with_and_without_workers(ctx, server, read_only, bad, mode):
    bad.prepare(ctx, read_only)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *real_model(server), *bad.args, *mode)
    assert_usage_error_before_any_call(ctx, server, result, bad)


def test_outputs_from_the_ini_are_checked_too(ctx, server):
    ctx.ini(pythonpath=".", ctx_report="out")
    (ctx.path / "out").mkdir()
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *real_model(server))
    bad = BadOutput("ini", (), "--ctx-report", "out", "it is a directory; expected a file path")
    assert_usage_error_before_any_call(ctx, server, result, bad)


def test_default_outputs_are_checked_once_scenarios_are_collected(ctx, xdist_args):
    ctx.write("reports", "quarterly numbers\n")  # a file where the default outputs go
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *xdist_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert f"--ctx-results: cannot write {ctx.path}/reports/results.jsonl" in text
    assert f"{ctx.path}/reports is a file, not a directory" in text
    assert_no_traceback(result)


def test_a_mock_model_writes_no_cassettes_so_their_path_is_not_checked(ctx):
    ctx.write("notes.txt", "my notes\n")
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-cassettes=notes.txt")
    result.assert_outcomes(passed=1)


def test_replaying_cassettes_needs_no_writable_cassette_dir(ctx, server, read_only):
    read_only(ctx.path / "cassettes")
    ctx.scenario("recall", SCENARIO)
    result = ctx.run(
        "--ctx-strategy=full", *real_model(server), "--ctx-cassettes=cassettes", "--ctx-record=none"
    )
    assert result.ret != pytest.ExitCode.USAGE_ERROR, output(result)
    assert "--ctx-cassettes: cannot write" not in output(result)


# -- the results file and the report belong to the same run -------------------------------------


def test_a_run_that_selects_no_probe_leaves_the_last_results_and_report_alone(ctx):
    ctx.scenario("recall", SCENARIO)
    ctx.write("test_x.py", "def test_one():\n    assert True\n")
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=2)
    results = (ctx.path / "reports" / "results.jsonl").read_bytes()
    report = (ctx.path / "reports" / "ctxeval.html").read_bytes()
    assert len(read_jsonl(ctx.path / "reports" / "results.jsonl")) == 1
    ctx.run("--ctx-strategy=full", "-k", "test_one").assert_outcomes(passed=1, deselected=1)
    assert (ctx.path / "reports" / "results.jsonl").read_bytes() == results
    assert (ctx.path / "reports" / "ctxeval.html").read_bytes() == report


INTERRUPTING_STRATEGY = """
    from pytest_ctxeval.strategies.base import BaseStrategy


    class Interrupting(BaseStrategy):
        \"\"\"Stands for a Ctrl-C while the first probe is being answered.\"\"\"

        name = "interrupting"

        def window(self):
            raise KeyboardInterrupt
"""


def test_an_interrupted_run_leaves_no_stale_results_beside_its_report(ctx):
    """Decided: the results file is emptied, not removed, so a reader of the
    run finds this run's (empty) results where it looks for them."""
    ctx.write("interrupting.py", INTERRUPTING_STRATEGY)
    ctx.scenario("recall", SCENARIO)
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=1)
    assert len(read_jsonl(ctx.path / "reports" / "results.jsonl")) == 1
    report = ctx.path / "reports" / "ctxeval.html"
    report.write_text("the previous run's report", encoding="utf-8")
    # A subprocess: in-process, pytester passes the interrupt on to this test run.
    result = ctx.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ctx-strategy=interrupting:Interrupting"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED, output(result)
    assert (ctx.path / "reports" / "results.jsonl").read_text(encoding="utf-8") == ""
    assert "No results were recorded." in report.read_text(encoding="utf-8")
