"""What a run pays besides its own work: the objects collection built are
kept out of the garbage collector's full passes (pytest runs two at session
end), in a run with scenarios only, and handed back when pytest is done;
the interpreter's last collection skips what the run leaves (on the xdist
controller too); while an item is evaluated the collector's young pass runs less often, and
its thresholds are put back after; a finished session is not kept alive to
the end of the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCENARIO = """
id: vault
turns:
  - user: "For the record, the vault combination is 7-3-9-1."
  - assistant: Noted.
probes:
  - {id: code, user: "What is the vault combination?", expect: {contains: "7-3-9-1"}}
"""

CHECK = textwrap.dedent("""
    import atexit
    import gc
    import sys
    import pytest

    # Registered first, so it runs last as the interpreter exits.
    atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0, flush=True))

    class Check:
        def pytest_sessionfinish(self, session):
            print("frozen during the run:", gc.get_freeze_count() > 0)

    before = gc.get_threshold()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Check()])
    print("frozen after:", gc.get_freeze_count() > 0, "exit", int(code))
    print("thresholds put back:", gc.get_threshold() == before)
    """)


def run(project: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", CHECK, *args],
        cwd=project,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.stdout + result.stderr


def test_a_scenario_run_freezes_what_collection_built(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "vault.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    out = run(tmp_path, "--ctx-strategy=full")
    assert "frozen during the run: True" in out, out
    assert "frozen after: False exit 0" in out, out
    # The interpreter's last collection does not walk what the run left.
    assert "frozen at exit: True" in out, out


def test_the_xdist_controller_skips_the_last_collection_too(tmp_path: Path) -> None:
    # It keeps every record to the end: walking them as it exits cost 0.5 s
    # after 1,200 items, more than a tenth of what -n 2 saves on them.
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "vault.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    out = run(tmp_path, "--ctx-strategy=full", "-n", "2")
    assert "frozen after: False exit 0" in out, out
    assert "frozen at exit: True" in out, out


WATCH_STRATEGY = """
import gc

from pytest_ctxeval.strategies.base import BaseStrategy, Window


class Watch(BaseStrategy):
    name = "watch"

    def window(self):
        print("young pass during the item: every", gc.get_threshold()[0])
        return Window(messages=list(self.history))
"""


def test_an_item_is_evaluated_with_fewer_young_passes(tmp_path: Path) -> None:
    # A long session builds much that lives on; the collector's young pass
    # every 700 new objects made a 10 MB session a quarter slower.
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "vault.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "watch.py").write_text(WATCH_STRATEGY, encoding="utf-8")
    out = run(tmp_path, "--ctx-strategy=watch:Watch", "-s")
    assert "young pass during the item: every 50000" in out, out
    assert "frozen after: False exit 0" in out, out
    assert "thresholds put back: True" in out, out


def test_an_unrelated_project_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_ok():\n    assert True\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    out = run(tmp_path)
    assert "frozen during the run: False" in out, out
    assert "frozen after: False exit 0" in out, out
    assert "thresholds put back: True" in out, out
    assert "frozen at exit: False" in out, out


TWO_PROBES = """
id: vault
turns:
  - user: "For the record, the vault combination is 7-3-9-1."
  - assistant: Noted.
  - user: "And the safe is behind the painting of the harbour."
  - assistant: Noted.
probes:
  - {id: code, user: "What is the vault combination?", expect: {contains: "7-3-9-1"}}
  - {id: safe, user: "Where is the safe?", expect: {contains: "painting"}}
"""


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_session_is_let_go_once_its_last_selected_probe_is_answered(concurrency: int) -> None:
    # A long run must not keep every session's windows alive to its end.
    from pytest_ctxeval.evaluate.runner import EvalSettings, Evaluator
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    (conversation,) = parse_conversations(TWO_PROBES, "vault.yaml")
    spec = resolve("full")[0]
    run = ("vault.yaml", conversation.id, spec.name)
    evaluator = Evaluator(EvalSettings(concurrency=concurrency), selection={run: {"code", "safe"}})
    code, safe = conversation.probes
    first = evaluator.evaluate(conversation, spec, code, source="vault.yaml")
    if concurrency == 1:  # probe by probe: the second still needs the session
        assert run in evaluator._traces
    second = evaluator.evaluate(conversation, spec, safe, source="vault.yaml")
    assert run not in evaluator._traces
    assert (first.verdict, second.verdict) == ("pass", "pass")
    # Asked again (a re-run), the session is simulated again, to the same record.
    again = evaluator.evaluate(conversation, spec, code, source="vault.yaml")
    assert again.model_dump(exclude={"latency_s"}) == first.model_dump(exclude={"latency_s"})
