"""What a run pays besides its own work: the objects collection built are
kept out of the garbage collector's full passes (pytest runs two at session
end), in a run with scenarios only, and handed back when pytest is done."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCENARIO = """
id: vault
turns:
  - user: "For the record, the vault combination is 7-3-9-1."
  - assistant: Noted.
probes:
  - {id: code, user: "What is the vault combination?", expect: {contains: "7-3-9-1"}}
"""

CHECK = textwrap.dedent("""
    import gc
    import sys
    import pytest

    class Check:
        def pytest_sessionfinish(self, session):
            print("frozen during the run:", gc.get_freeze_count() > 0)

    code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Check()])
    print("frozen after:", gc.get_freeze_count() > 0, "exit", int(code))
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


def test_an_unrelated_project_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text("def test_ok():\n    assert True\n", encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    out = run(tmp_path)
    assert "frozen during the run: False" in out, out
    assert "frozen after: False exit 0" in out, out
