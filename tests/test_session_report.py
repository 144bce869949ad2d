"""Session cost and prompt-cache figures as a user sees them: in the records,
the terminal summary, the Markdown summary and the HTML report."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from conftest import CtxProject, summary_line
from fake_openai_server import FakeOpenAIServer
from test_session_costs import agent_session_yaml

from pytest_ctxeval.report.page_data import drilldown_items, read_page_data

RECALL = """
    id: recall
    system: You are a careful assistant who keeps every detail of the project in mind.
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted, the launch code is ZEBRA-42.
      - user: "The backup site is in Oslo."
      - assistant: Noted, Oslo.
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
      - {id: site, user: "Where is the backup site?", expect: {contains: "Oslo"}}
"""


def with_agent_scenario(ctx: CtxProject) -> None:
    """A long agent session (see test_session_costs.agent_session_yaml)."""
    ctx.write("scenarios/agent.yaml", agent_session_yaml())


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_the_sessions_strategy_calls_are_counted_once_not_per_probe(ctx: CtxProject) -> None:
    with_agent_scenario(ctx)
    ctx.run("--ctx-strategy=compaction")
    records = ctx.results()
    assert len(records) == 3
    session_calls = {r["session_strategy_calls"] for r in records}
    assert len(session_calls) == 1 and session_calls.pop() > 0
    # Each probe's own calls only: the session's compactions are not repeated in them.
    assert all(r["strategy_calls"] < r["session_strategy_calls"] for r in records)
    assert all(r["llm_calls"] < r["session_strategy_calls"] + 1 for r in records)


def test_records_carry_the_cache_model_and_the_per_request_series(ctx: CtxProject) -> None:
    with_agent_scenario(ctx)
    result = ctx.run("--ctx-strategy=full,sliding", "--ctx-summary=summary.md")
    records = {r["strategy"]: r for r in ctx.results() if r["probe"] == "first"}
    full, sliding = records["full"], records["sliding"]
    assert full["cache_model"] == sliding["cache_model"] == "openai"
    assert full["cache_breaks"] == [] and full["session_cache_hit_ratio"] > 0.9
    assert sliding["cache_breaks"][0]["reason"] == "message_removed"
    assert sliding["cache_break_count"] >= len(sliding["cache_breaks"])
    calls = len(full["session_prompt_tokens"])
    assert len(full["session_requests"]["cached_tokens"]) == calls
    assert max(sliding["session_requests"]["evicted_tokens"]) > 0
    assert "evicted_tokens" not in full["session_requests"]  # full evicts nothing
    # The terminal and the Markdown summary show the cache hit ratio.
    assert re.search(r"cache hit +9\d%", summary_line(result, "full"))
    summary = (ctx.path / "summary.md").read_text()
    assert "| cache hit |" in summary and "cost per task (USD)" in summary
    # The report draws the cached tokens under each prompt-token curve.
    report = (ctx.path / "reports" / "ctxeval.html").read_text()
    assert "Prompt tokens and cached tokens per model call" in report
    assert 'class="series cached"' in report
    # A probe's details name the first request that broke the cached prefix, and why.
    breaks = [i["tokens"]["cache_break"] for i, _ in drilldown_items(read_page_data(report))]
    assert any(
        re.fullmatch(r"request \d+, message 1: message_removed \(\d+ breaks\)", b or "")
        for b in breaks
    ), breaks


def test_a_priced_model_shows_the_cost_per_task(ctx: CtxProject, server: FakeOpenAIServer) -> None:
    ctx.scenario("recall", RECALL)
    result = ctx.run(
        "--ctx-strategy=full",
        "--ctx-model=openai/gpt-4o-mini",
        f"--ctx-api-base={server.url}",
        "--ctx-summary=summary.md",
    )
    records = ctx.results()
    assert len(records) == 2
    session_cost = records[0]["session_cost_usd"]
    # Two simulated requests priced: the session costs something, once.
    assert session_cost > 0 and {r["session_cost_usd"] for r in records} == {session_cost}
    task = session_cost + sum(r["cost_usd"] for r in records)
    line = summary_line(result, "full")
    assert f"cost/task ${task:.4f}" in line, line
    assert f"| {task:.4f} |" in (ctx.path / "summary.md").read_text()


def test_cache_rules_and_time_between_turns_are_options(ctx: CtxProject) -> None:
    with_agent_scenario(ctx)
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=2, xfailed=1)
    openai_hits = ctx.results()[0]["session_cached_tokens"]
    ctx.run("--ctx-strategy=full", "--ctx-cache-model=anthropic").assert_outcomes(
        passed=2, xfailed=1
    )
    (record, *_) = ctx.results()
    assert record["cache_model"] == "anthropic"
    assert record["session_cache_write_tokens"] > 0  # Anthropic charges cache writes
    # Ten minutes between requests: every cache entry has expired (5-minute lifetime).
    ctx.run("--ctx-strategy=full", "--ctx-seconds-per-turn=600").assert_outcomes(
        passed=2, xfailed=1
    )
    assert openai_hits > 0 and ctx.results()[0]["session_cached_tokens"] == 0


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("--ctx-cache-model=gemini", "--ctx-cache-model: invalid value 'gemini'; expected one of"),
        ("--ctx-seconds-per-turn=-1", "--ctx-seconds-per-turn: invalid value '-1'"),
    ],
)
def test_bad_cache_options_are_one_usage_error(ctx: CtxProject, option: str, expected: str) -> None:
    with_agent_scenario(ctx)
    result = ctx.run("--ctx-strategy=full", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
