"""The run's token totals match a hand count: a strategy's "tokens" are
every simulated session once plus every request every probe made."""

from __future__ import annotations

import re

import pytest
from conftest import CtxProject, summary_line

SCENARIO = """
id: three-questions
system: You are a helpful assistant.
turns:
  - user: The staging database listens on port 5433.
  - assistant: Noted.
  - user: The deploy token is tok-4471.
  - assistant: Noted.
  - user: Our release codename is Osprey.
  - assistant: Noted.
probes:
  - {id: port, user: "Which port does the staging database use?", expect: {contains: "5433"}}
  - {id: token, user: "What is the deploy token?", expect: {contains: "tok-4471"}}
  - {id: codename, user: "What is our release codename?", expect: {contains: "Osprey"}}
"""


def hand_count(records: list[dict]) -> int:
    """The session's requests once, then each probe's own request (one per
    probe: under ``full`` the oracle answers at once)."""
    sessions = {r["session_input_tokens"] for r in records}
    assert len(sessions) == 1
    return sessions.pop() + sum(r["prompt_tokens"] for r in records)


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["serial", "n2"])
def test_the_summarys_tokens_are_the_session_plus_every_probe(
    ctx: CtxProject, args: tuple[str, ...]
) -> None:
    ctx.scenario("three", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *args)
    assert result.ret == 0, result.stdout.str()
    records = ctx.results()
    assert len(records) == 3 and all(r["memory_retrievals"] == 0 for r in records)
    expected = hand_count(records)
    # Each record's own probe requests are in it too.
    assert [r["probe_input_tokens"] for r in records] == [r["prompt_tokens"] for r in records]
    shown = re.search(r"tokens\s+([\d,]+)", summary_line(result, "full"))
    assert shown is not None
    assert int(shown[1].replace(",", "")) == expected

    from pytest_ctxeval import results_frame, strategy_table

    table = strategy_table(results_frame(ctx.path / "reports/results.jsonl"))
    assert table.loc["full", "cumulative_input_tokens"] == expected


def test_every_repeat_of_a_probe_counts(ctx: CtxProject) -> None:
    ctx.scenario("three", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-repeat=3")
    assert result.ret == 0, result.stdout.str()
    records = ctx.results()
    assert [r["probe_input_tokens"] for r in records] == [3 * r["prompt_tokens"] for r in records]
    session = records[0]["session_input_tokens"]
    shown = re.search(r"tokens\s+([\d,]+)", summary_line(result, "full"))
    assert shown is not None
    total = session + sum(3 * r["prompt_tokens"] for r in records)
    assert int(shown[1].replace(",", "")) == total
