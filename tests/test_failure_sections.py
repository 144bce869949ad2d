"""pytest's FAILURES section looks up each failure's teardown output among the
run's setup and teardown reports; the plugin leaves it only the reports that
have some, so printing it stays linear in the number of items, and what it
prints is unchanged."""

from __future__ import annotations

import json
from typing import Any

from conftest import CtxProject

from pytest_ctxeval.failure_sections import phase_reports_with_output

# Sliding (the last 6 turns) loses the launch code: three failing probes.
FORGETFUL = """
    id: forgetful
    turns:
      - user: "Before we start: the launch code is ZEBRA-42."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 12, seed: 1}
    probes:
      - {id: code-1, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: code-2, user: "Tell me the launch code.", expect: {contains: "ZEBRA-42"}}
      - {id: code-3, user: "Which launch code did I give?", expect: {contains: "ZEBRA-42"}}
"""
PLAIN_TESTS = """
import pytest

@pytest.fixture
def noisy():
    yield
    print("closing the noisy fixture")

def test_fails_with_teardown_output(noisy):
    assert False

def test_fails_quietly():
    assert False

def test_passes():
    pass
"""
# What pytest's own sections see: a hook that runs among them.
WATCHER = """
import json

def pytest_terminal_summary(terminalreporter):
    seen = [(r.nodeid, r.when) for r in terminalreporter.stats.get("", [])]
    with open("seen-during.json", "w") as fh:
        json.dump(seen, fh)

def pytest_unconfigure(config):
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    with open("seen-after.json", "w") as fh:
        json.dump(len(reporter.stats.get("", [])), fh)
"""


def test_the_failures_section_sees_only_the_teardowns_with_output_and_prints_as_before(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("forgetful", FORGETFUL)
    ctx.write("test_plain.py", PLAIN_TESTS)
    ctx.write("conftest.py", WATCHER)
    result = ctx.run("--ctx-strategy=sliding", "scenarios", "test_plain.py", *xdist_args)
    out = result.stdout.str()
    result.assert_outcomes(failed=5, passed=1)
    assert "closing the noisy fixture" in out.split("= FAILURES =")[1]
    assert "Captured stdout teardown" in out
    for probe in ("code-1", "code-2", "code-3"):
        assert f"forgetful::{probe}[sliding]" in out.split("= FAILURES =")[1]
    during = json.loads((ctx.path / "seen-during.json").read_text())
    assert during == [["test_plain.py::test_fails_with_teardown_output", "teardown"]]
    # A setup and a teardown report for each of the six items, back afterwards.
    assert json.loads((ctx.path / "seen-after.json").read_text()) == 12


class Report:
    def __init__(self, when: str, sections: list[tuple[str, str]] | None = None) -> None:
        self.when = when
        self.sections = sections or []


def test_the_reports_set_aside_come_back_in_order_with_any_added_meanwhile() -> None:
    quiet_setup = Report("setup", [("Captured stdout setup", "hello")])
    quiet_teardown = Report("teardown", [("Captured log call", "x")])
    loud_teardown = Report("teardown", [("Captured stderr teardown", "bye")])
    other = Report("collect")
    phases: list[Any] = [quiet_setup, loud_teardown, quiet_teardown, other]
    stats = {"": phases}
    late = Report("teardown")
    with phase_reports_with_output(stats):
        assert stats[""] == [loud_teardown, other]
        stats[""].append(late)
    assert stats[""] is phases
    assert phases == [quiet_setup, loud_teardown, quiet_teardown, other, late]
