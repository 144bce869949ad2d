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


def asks(body: object, question: str) -> bool:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return bool(messages) and messages[-1].get("content") == question


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    def answer_port_hang_window(body: object) -> Reply:
        # By the question, not by arrival: concurrent calls arrive in any order.
        if asks(body, "Which port does the database use?"):
            return reply("Port 5432, deploys on Tuesday.")
        return hang()

    with FakeOpenAIServer(responder=answer_port_hang_window) as fake:
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


# The server answers `port` and never answers `window`.  One call at a time,
# items run probe by probe, each under every strategy: `port` finishes under
# both strategies (the full-context answer doubles as ground truth), each
# item reporting as it ends, and `window[full]` hangs.  Concurrently, the
# first item's batch asks all four at once: the two `port` answers come back
# while both `window` calls hang, so the `port` items, which never got to
# report, keep their records all the same.
FINISHED = {("full", "port"), ("sliding-1", "port")}
CALLS_IN_FLIGHT = {"1": 3, "8": 4}


def answered(tmp_path: Path) -> int:
    """The answers recorded as cassettes: each is written once its call returns."""
    return len(list((tmp_path / "reports/cassettes").glob("*.json")))


@pytest.mark.parametrize("concurrency", sorted(CALLS_IN_FLIGHT))
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
            wait_for(lambda: answered(tmp_path) == len(FINISHED), "the answers", proc)
            # The rest are in flight, and will never be answered.
            calls = CALLS_IN_FLIGHT[concurrency]
            wait_for(lambda: len(server.chat_requests) == calls, "the hanging calls", proc)
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
    assert {(r["strategy"], r["probe"]) for r in records} == FINISHED
    assert {(r["verdict"], r["error"]) for r in records} == {("pass", None)}
    assert report.exists(), shown
    assert "KeyboardInterrupt" in shown
