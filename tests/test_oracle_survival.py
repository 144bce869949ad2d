"""The mock model and fact survival agree: a fact that survival calls
visible (``verbatim`` or ``transformed``, a memory preview included) is one
``ctxeval/oracle`` can find in the same window, so it is never a
``context_loss``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, by_key

from pytest_ctxeval.scenario.loader import load_conversations

ROOT = Path(__file__).resolve().parents[1]
VISIBLE = ("verbatim", "transformed")


def disagreements(records: list[dict[str, Any]], scenarios: Path) -> list[str]:
    """Each record whose probe's own fact (needle, constraint, cited
    evidence) survival calls visible, yet the strategy lost the answer."""
    probes: dict[tuple[str, str], Any] = {}
    for path in sorted(scenarios.rglob("*.yaml")):
        if any(part.startswith("_") for part in path.relative_to(scenarios).parts):
            continue
        for conversation in load_conversations(path, root=scenarios):
            for probe in conversation.probes:
                probes[(conversation.id, probe.id)] = probe
    found = []
    for record in records:
        if record.get("mode") == "rollout":
            continue  # a live session, not a probe: its own checks (see test_rollout)
        probe = probes[(record["scenario"], record["probe"].split("@")[0])]
        own = [f for f in (probe.needle, probe.constraint, *probe.evidence) if f]
        shown = [f for f in own if record["fact_survival"].get(f) in VISIBLE]
        if shown and record["classification"] == "context_loss":
            found.append(
                f"{record['scenario']}::{record['probe']}[{record['strategy']}]: "
                f"{shown} visible, {record['memory_retrievals']} retrievals, "
                f"answer {record['answer']!r}"
            )
    return found


def rows_with_a_question() -> str:
    rows = [json.dumps({"row": i, "status": "ok"}) for i in range(60)]
    rows.insert(45, "Did the nightly export finish before the backup window closed?")
    return "\n".join(rows)


def preview_scenario() -> str:
    output = json.dumps(rows_with_a_question())
    return f"""
id: preview-shows-the-key
system: You are an operations assistant.
turns:
  - user: Dump the rows.
  - tool: {{name: dump_rows, output: {output}}}
  - assistant: Here they are.
  - user: Thanks.
  - assistant: You are welcome.
needles:
  - id: api-key
    turn: 3
    text: "SPECIAL_API_KEY = 'secret-9981'"
    question: What is SPECIAL_API_KEY?
    answer: secret-9981
probes:
  - {{id: key, needle: api-key}}
"""


@pytest.mark.parametrize("listing", ["message", "tool"])
def test_a_value_shown_in_a_memory_preview_is_found(ctx: CtxProject, listing: str) -> None:
    """The preview joins excerpts, the last of them a question: the key's
    excerpt is still read (or its memory retrieved), never skipped with it."""
    ctx.scenario("preview", preview_scenario())
    result = ctx.run(f"--ctx-strategy=headtail(listing={listing})")
    record = next(iter(by_key(ctx.results()).values()))
    assert record["fact_survival"] == {"api-key": "verbatim"}
    assert record["classification"] == "ok", result.stdout.str()
    assert "secret-9981" in (record["answer"] or "")
    assert disagreements(ctx.results(), ctx.path / "scenarios") == []


STRATEGIES = "all,headtail-200,headtail(listing=tool),strategy-d,truncate-items-100,sliding-8"


def test_survival_and_the_oracle_never_disagree_on_the_bundled_scenarios(
    ctx: CtxProject,
) -> None:
    shutil.copytree(ROOT / "scenarios", ctx.path / "scenarios")
    ctx.run(f"--ctx-strategy={STRATEGIES}", "-n", "2")
    records = ctx.results()
    assert len(records) > 500
    assert sum(1 for r in records if set(r["fact_survival"].values()) & set(VISIBLE)) > 200
    assert disagreements(records, ctx.path / "scenarios") == []
