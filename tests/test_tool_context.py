"""End to end: tool calls and tool definitions are context, for the answers,
the classification, fact survival and the probe's cached prefix."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import CtxProject, by_key
from inline_scenarios import parse_inline

from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.llm.tokens import shared_prefix_tokens, tools_tokens
from pytest_ctxeval.strategies.base import fork_strategy
from pytest_ctxeval.strategies.headtail import HeadTailStrategy

# The port lives only in a write_file call's arguments; 8 turns of chit-chat
# follow, so sliding (last 6 turns) loses the call.
ARGS = """
    id: args
    turns:
      - user: Put the staging port in the settings.
      - assistant: Writing it.
        tool_calls:
          - {name: write_file, args: {path: settings.py, content: "STAGING_PORT = 5433"}}
      - tool: {name: write_file, output: written}
      - assistant: Done.
      - generate: {kind: chitchat, turns: 8, seed: 3}
    probes:
      - {id: port, user: "What is STAGING_PORT?", expect: {contains: "5433"}}
"""

# The answer "15" is also in log timestamps; sliding drops the turn with the fact.
LOGS = """
    id: logs
    turns:
      - user: Remember the retry limit.
      - assistant: Sure.
      - generate: {kind: chitchat, turns: 6, seed: 4}
      - user: Here are the worker logs.
      - assistant: "12:15:03 worker started\\n12:15:09 worker idle"
    needles:
      - {id: retries, turn: 1, text: "The retry limit is 15.", question: q, answer: "15"}
    probes:
      - {id: retries, needle: retries}
"""

# A bulky tool output early, then short turns: headtail stores its middle once
# and the retrieve_memory tool stays the same up to the probe.
STEADY = """
    id: steady
    turns:
      - user: Show me yesterday's spans.
      - tool: {name: query_spans, generate: {kind: json_rows, rows: 40, seed: 7}}
      - assistant: Most spans finish quickly.
      - generate: {kind: chitchat, turns: 3, seed: 2}
    probes:
      - {id: p, user: "Which span was slowest?"}
"""

# The last message before the probe is bulky: the probe's request shortens it,
# so the tool listing gains a memory and the cached prefix is lost.
CHANGING = """
    id: changing
    turns:
      - user: Show me yesterday's spans.
      - assistant: Here they are.
      - user: And today's?
      - tool: {name: query_spans, generate: {kind: json_rows, rows: 40, seed: 8}}
    probes:
      - {id: p, user: "Which span was slowest?"}
"""


Records = dict[tuple[str, str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def _run_cache() -> dict[str, Records]:
    return {}


@pytest.fixture
def records(ctx: CtxProject, _run_cache: dict[str, Records]) -> Records:
    """One run of the four scenarios per module, shared by its tests."""
    if "run" not in _run_cache:
        ctx.ini(pythonpath=".", ctx_strategy="full,sliding,headtail")
        scenarios = {"args": ARGS, "logs": LOGS, "steady": STEADY, "changing": CHANGING}
        for name, text in scenarios.items():
            ctx.scenario(name, text)
        ctx.run("-p", "no:xdist")
        _run_cache["run"] = by_key(ctx.results())
    return _run_cache["run"]


def test_a_fact_lost_with_its_tool_call_is_a_context_loss(records):
    full, sliding = records[("args", "full", "port")], records[("args", "sliding", "port")]
    assert "5433" in full["answer"]
    assert full["classification"] == "ok"
    assert sliding["classification"] == "context_loss"  # not model_miss: full found it


def test_an_answer_in_unrelated_text_does_not_make_a_fact_survive(records):
    assert records[("logs", "full", "retries")]["fact_survival"] == {"retries": "verbatim"}
    # The timestamps 12:15:03 survive; the fact does not.
    assert records[("logs", "sliding", "retries")]["fact_survival"] == {"retries": "gone"}


def expected_prefix(text: str) -> tuple[int, int]:
    """(cached prefix as the probe request should count it, the tools' tokens)."""
    (conversation,) = parse_inline(text)
    client = ModelClient("ctxeval/oracle")
    trace = simulate(conversation, HeadTailStrategy(), client=client, model="ctxeval/oracle")
    strategy = fork_strategy(trace.strategy)
    strategy.add({"role": "user", "content": conversation.probes[0].question})
    window = strategy.window()
    prefix = shared_prefix_tokens(
        trace.last_window,
        window.messages,
        "ctxeval/oracle",
        previous_tools=trace.last_tools,
        tools=window.tools,
    )
    return prefix, tools_tokens(window.tools)


def test_the_probes_cached_prefix_starts_with_unchanged_tools(records):
    prefix, tools = expected_prefix(STEADY)
    assert tools > 0
    assert records[("steady", "headtail", "p")]["cached_prefix_tokens"] == prefix > tools


def test_a_changed_tool_definition_leaves_the_probe_no_cached_prefix(records):
    assert expected_prefix(CHANGING)[0] == 0
    assert records[("changing", "headtail", "p")]["cached_prefix_tokens"] == 0
    # Without tools nothing changes: full still shares the session's messages.
    assert records[("changing", "full", "p")]["cached_prefix_tokens"] > 0
