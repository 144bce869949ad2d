"""The bundled suite runs under every adapter on the mock model, in one run
with xdist workers: every item gets a record, and only the documented
failure (the summarising session recipe and tool calls) is an error."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = (
    "langchain-trim",
    "langchain-summarization",
    "langchain-context-editing",
    "openai-agents-session",
    "openai-agents-session(session=trimming)",
    "openai-agents-session(session=summarizing)",
    "inspect-compaction",
    "anthropic-context-editing",
)
LIBRARIES = ("langchain", "agents", "inspect_ai")

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in LIBRARIES),
    reason="the adapters' libraries are not all installed: pip install -e "
    '".[langchain,openai-agents,inspect]"',
)


def test_the_bundled_suite_runs_under_every_adapter(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    command = [
        sys.executable, "-m", "pytest", "scenarios", "-p", "no:cacheprovider", "-q", "-n", "2",
        "--ctx-model=ctxeval/oracle", f"--ctx-strategy=full,{','.join(ADAPTERS)}",
        f"--ctx-results={results}", f"--ctx-report={tmp_path / 'report.html'}",
    ]  # fmt: skip
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert results.is_file(), run.stdout[-2000:] + run.stderr[-2000:]
    records = [json.loads(line) for line in results.read_text("utf-8").splitlines()]
    per_strategy = Counter(r["strategy"] for r in records)
    items = per_strategy["full"]
    assert items >= 30 and len(per_strategy) == 1 + len(ADAPTERS), per_strategy
    assert set(per_strategy.values()) == {items}, per_strategy
    errors = {(r["strategy"], r["error"].split(":")[0]) for r in records if r["error"]}
    recipe = "openai-agents-session[session:summarizing]"
    assert {name for name, _ in errors} <= {recipe}, errors
    assert all("Unhandled item type" in r["error"] for r in records if r["error"])
    passed = Counter(r["strategy"] for r in records if r["verdict"] == "pass")
    # The SDK session without a limit sends the whole chat; the trims lose
    # context; compaction past a high threshold loses less than trimming.
    assert passed["openai-agents-session"] >= passed["full"] - 2
    assert passed["langchain-trim"] < passed["full"]
    assert passed["langchain-trim"] < passed["inspect-compaction"] < passed["full"]
