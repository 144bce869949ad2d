"""Two runs writing the same reports/ at once never interleave: the second
refuses with one line naming the first run's process, and the first run's
results stay whole.  The workers of one run all still write (through their
controller)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import assert_no_traceback, output, read_jsonl

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: again, user: "Repeat the launch code.", expect: {contains: "ZEBRA-42"}}
"""

# While the first run's first item runs, a second run starts in the same
# project; what it printed and its exit code are left in second-run.txt.
CONFTEST = """
import os, subprocess, sys
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if os.environ.get("SECOND_RUN") or os.path.exists("second-run.txt"):
        return
    with open("second-run.txt", "w") as out:
        out.write("started\\n")
    env = {**os.environ, "SECOND_RUN": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ctx-strategy=full",
         "-p", "no:xdist"],
        cwd=str(item.config.rootpath), env=env, capture_output=True, text=True, timeout=120,
    )
    with open("second-run.txt", "w") as out:
        out.write(f"{done.returncode}\\n{done.stdout}\\n{done.stderr}")
"""


def test_a_second_run_on_the_same_reports_refuses_while_the_first_writes(ctx, xdist_args):
    ctx.write("conftest.py", CONFTEST)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full,sliding", *xdist_args)
    assert result.ret == 0, output(result)
    code, _, second = (ctx.path / "second-run.txt").read_text(encoding="utf-8").partition("\n")
    assert int(code) == pytest.ExitCode.USAGE_ERROR, second
    lines = [line for line in second.splitlines() if "--ctx-results" in line]
    assert lines, second
    assert f"pid {os.getpid()}" in lines[0]
    assert str(ctx.path / "reports") in lines[0]
    assert "Traceback" not in second
    # The first run's records: all four, each a whole line, all of this run.
    records = read_jsonl(ctx.path / "reports" / "results.jsonl")
    assert sorted((r["strategy"], r["probe"]) for r in records) == [
        ("full", "again"),
        ("full", "launch-code"),
        ("sliding", "again"),
        ("sliding", "launch-code"),
    ]
    assert len({r["run_id"] for r in records}) == 1
    assert_no_traceback(result)


def test_runs_one_after_the_other_both_write(ctx):
    ctx.scenario("recall", SCENARIO)
    for _ in range(2):
        result = ctx.run("--ctx-strategy=full")
        assert result.ret == 0, output(result)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ctx-strategy=full"],
        cwd=ctx.path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(read_jsonl(ctx.path / "reports" / "results.jsonl")) == 2


ELSEWHERE = '"--ctx-results=other/results.jsonl", "--ctx-report=other/report.html",'


def test_a_run_writing_elsewhere_is_not_held_up(ctx):
    conftest = CONFTEST.replace('"--ctx-strategy=full",', f'"--ctx-strategy=full", {ELSEWHERE}')
    ctx.write("conftest.py", conftest)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full")
    assert result.ret == 0, output(result)
    code, _, second = (ctx.path / "second-run.txt").read_text(encoding="utf-8").partition("\n")
    assert int(code) == 0, second
    assert len(read_jsonl(ctx.path / "other" / "results.jsonl")) == 2
