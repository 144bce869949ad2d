"""Ctrl-C during a run with model calls in flight: the process exits within
seconds, with the records of the items that finished in results.jsonl and
the report written.  A server that never answers must not keep it alive.

The run is a real subprocess, sent a real SIGINT: what matters is how the
interpreter exits, which an in-process run cannot show."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, Reply, hang, ops_scenario, reply

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")

SCENARIO = ops_scenario(
    "ops",
    '{id: port, user: "Which port does the database use?", expect: {contains: "5432"}}',
    '{id: window, user: "When is the deploy window?", expect: {contains: Tuesday}}',
)
# The last turn only: a window unlike the full context, so its requests are new ones.
SLIDING_1 = "name: sliding-1\nkind: sliding\nparams: {turns: 1}\n"
# How long Ctrl-C may take to end the run: seconds, where a hung call would
# hold it for the whole --ctx-timeout (300 s); generous for a loaded machine.
EXIT_WITHIN_S = 30.0


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    answered = 0

    def answer_two_then_hang(body: object) -> Reply:
        nonlocal answered
        answered += 1
        return reply("Port 5432, deploys on Tuesday.") if answered <= 2 else hang()

    with FakeOpenAIServer(responder=answer_two_then_hang) as fake:
        yield fake


def interruptible() -> None:
    """Ctrl-C as a terminal's foreground job gets it: a job started in the
    background of a shell (``cmd &``) inherits SIGINT ignored, and so would
    the run under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90  # a cold start imports litellm
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def finished_records(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


# Items run probe by probe, each under every strategy.  One at a time, the
# first two requests finish `port` under both strategies (the full-context
# answer doubles as ground truth), and `window[full]` hangs.  Concurrently,
# the `full` run asks both its probes at once, and `port[sliding-1]` hangs.
FINISHED = {
    "1": {("full", "port"), ("sliding-1", "port")},
    "8": {("full", "port")},
}


@pytest.mark.parametrize("concurrency", sorted(FINISHED))
def test_ctrl_c_with_calls_in_flight_exits_promptly_keeping_finished_records(
    tmp_path: Path, server: FakeOpenAIServer, concurrency: str
) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios/ops.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies/sliding-1.yaml").write_text(SLIDING_1, encoding="utf-8")
    results, report = tmp_path / "out/results.jsonl", tmp_path / "out/report.html"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={server.url}",
        "--ctx-strategy=full,sliding-1",
        f"--ctx-concurrency={concurrency}",
        f"--ctx-results={results}",
        f"--ctx-report={report}",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    with (tmp_path / "output.txt").open("wb") as log:
        proc = subprocess.Popen(
            command,
            cwd=tmp_path,
            stdout=log,
            stderr=log,
            env=env,
            preexec_fn=interruptible,
        )
        try:
            expected = len(FINISHED[concurrency])
            wait_for(lambda: len(finished_records(results)) == expected, "the records", proc)
            # A call is in flight, and will never be answered.
            wait_for(lambda: len(server.chat_requests) > 2, "a hanging call", proc)
            proc.send_signal(signal.SIGINT)
            started = time.monotonic()
            try:
                proc.wait(timeout=EXIT_WITHIN_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running {EXIT_WITHIN_S:g} s after Ctrl-C")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    shown = (tmp_path / "output.txt").read_text(encoding="utf-8", errors="replace")
    assert time.monotonic() - started < EXIT_WITHIN_S
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, shown
    records = finished_records(results)
    assert {(r["strategy"], r["probe"]) for r in records} == FINISHED[concurrency]
    assert {(r["verdict"], r["error"]) for r in records} == {("pass", None)}
    assert report.exists(), shown
    assert "KeyboardInterrupt" in shown
