"""A crashed xdist worker never hangs the run.

A strategy written by the test kills its own worker process (SIGKILL, as
the kernel's OOM killer would) at a chosen point: while a window is built
for the first item a worker runs, in the middle of the run, at the last
item, while the session is simulated, and on every item of one scenario.
Each time the run ends by itself: the item the worker was running gets an
``error`` record, the replacement worker finishes the rest, the results and
the report are written, and pytest exits with 1."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import CtxProject

pytestmark = pytest.mark.usefixtures("_preloaded_modules")

# The strategy kills its process when it builds the window of a probe whose
# question names the kill point, once per run (a marker file says it did),
# or at every such probe when the point ends with "!".
KILLING_STRATEGY = """
    import os
    import signal

    from pytest_ctxeval.strategies.full import FullStrategy


    def _maybe_die(text, where):
        point = os.environ.get("CTX_KILL_AT", "")
        if not point or where != os.environ.get("CTX_KILL_WHEN", "window"):
            return
        if point.rstrip("!") not in text:
            return
        if not point.endswith("!"):
            try:
                os.close(os.open(os.environ["CTX_KILL_MARK"], os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return
        os.kill(os.getpid(), signal.SIGKILL)


    class Killing(FullStrategy):
        name = "killing"

        def add(self, message):
            _maybe_die(str(message.get("content")), "add")
            super().add(message)

        def window(self):
            window = super().window()
            _maybe_die(str(window.messages[-1].get("content")), "window")
            return window
"""

SCENARIO = """\
id: {id}
turns:
  - user: "Session {id}: the staging database listens on port 5432."
  - assistant: Noted.
  - user: "Session {id}: the deploy window is Tuesday."
  - assistant: Noted.
probes:
  - {{id: port, user: "{id} port: which port does staging use?", expect: {{contains: "5432"}}}}
  - {{id: day, user: "{id} day: when is the deploy window?", expect: {{contains: Tuesday}}}}
  - {{id: both, user: "{id} both: port and day?", expect: {{contains: "5432"}}}}
"""
SCENARIOS = ("s1", "s2", "s3", "s4", "s5", "s6")
ITEMS = len(SCENARIOS) * 3 * 2


def run_killed(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, at: str, when: str = "window"
) -> pytest.RunResult:
    ctx.write("killing.py", KILLING_STRATEGY)
    for name in SCENARIOS:
        ctx.scenario(name, SCENARIO.format(id=name))
    monkeypatch.setenv("CTX_KILL_AT", at)
    monkeypatch.setenv("CTX_KILL_WHEN", when)
    monkeypatch.setenv("CTX_KILL_MARK", str(ctx.path / "killed.mark"))
    # In a subprocess, with a timeout: a hang fails the test instead of the suite.
    return ctx.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--ctx-strategy=killing:Killing,full",
        "-p",
        "no:randomly",
        timeout=240,
    )


def records(ctx: CtxProject) -> dict[str, dict[str, object]]:
    lines = (ctx.path / "reports/results.jsonl").read_text(encoding="utf-8").splitlines()
    return {(r := json.loads(line))["nodeid"]: r for line in lines}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize(
    ("at", "when"),
    [
        ("s1 port", "window"),  # the first item handed out
        ("s3 day", "window"),  # in the middle of the run
        ("s6 both", "window"),  # the last scenario's last probe
        ("Session s2: the deploy", "add"),  # while a session is simulated
        ("s4!", "window"),  # every item of one scenario takes its worker down
    ],
    ids=["first", "middle", "last", "simulating", "every-item-of-one-scenario"],
)
def test_a_killed_worker_never_hangs_the_run(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, at: str, when: str
) -> None:
    result = run_killed(ctx, monkeypatch, at, when)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert (ctx.path / "killed.mark").exists() or at.endswith("!")
    found = records(ctx)
    assert len(found) == ITEMS, sorted(found)  # every item, once
    crashed = [r for r in found.values() if "crashed while running" in str(r["error"])]
    assert crashed and all(r["verdict"] == "error" for r in crashed)
    others = [r for r in found.values() if r not in crashed]
    assert all(r["verdict"] == "pass" for r in others), [r["error"] for r in others]
    assert (ctx.path / "reports/ctxeval.html").is_file()
    result.stdout.fnmatch_lines(["*replacing crashed worker*"])
