"""Each adapter kind runs a scenario end to end on the mock model, with and
without xdist workers."""

from __future__ import annotations

import importlib.util

import pytest
from agent_scenarios import agent_recall_scenario
from conftest import CtxProject, assert_no_traceback, output, summary_line

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("langchain_core") is None,
        reason='langchain-core is not installed: pip install -e ".[langchain]"',
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("agents") is None,
        reason='openai-agents is not installed: pip install -e ".[openai-agents]"',
    ),
]

AGENT = agent_recall_scenario()

KINDS = (
    "langchain-trim(max_tokens=400)",
    "openai-agents-session(limit=12)",
    "openai-agents-session",
    "toolprune+langchain-trim",
)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_every_adapter_kind_runs_a_scenario_on_the_mock_model(
    ctx: CtxProject, workers: tuple[str, ...]
) -> None:
    ctx.scenario("agent", AGENT)
    result = ctx.run(f"--ctx-strategy=full,{','.join(KINDS)}", *workers)
    assert_no_traceback(result)
    records = ctx.results()
    names = {
        "langchain-trim[max_tokens:400]",
        "openai-agents-session[limit:12]",
        "openai-agents-session",
        "toolprune+langchain-trim",
    }
    assert {r["strategy"] for r in records} == {"full", *names}, output(result)
    assert all(not r["error"] for r in records), [r["error"] for r in records if r["error"]]
    by = {(r["strategy"], r["probe"]): r for r in records}
    # The tight trim forgets the launch code said at the start; the whole
    # session (the SDK session without a limit) keeps it, as full does.
    assert by[("langchain-trim[max_tokens:400]", "launch-code")]["verdict"] == "fail"
    assert by[("langchain-trim[max_tokens:400]", "cat")]["verdict"] == "pass"
    assert by[("openai-agents-session", "launch-code")]["verdict"] == "pass"
    full = by[("full", "launch-code")]["prompt_tokens"]
    assert by[("openai-agents-session", "launch-code")]["prompt_tokens"] == full
    assert by[("langchain-trim[max_tokens:400]", "launch-code")]["prompt_tokens"] < full
    assert "passed" in summary_line(result, "openai-agents-session")


def test_an_adapter_preset_and_a_missing_extra_are_usage_errors(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx.scenario("agent", AGENT)
    ctx.write(
        "strategies/tight.yaml", "name: tight\nkind: langchain-trim\nparams: {max_tokens: 400}\n"
    )
    result = ctx.run("--ctx-strategy=tight")
    assert {r["strategy"] for r in ctx.results()} == {"tight"}, output(result)
    monkeypatch.setitem(__import__("sys").modules, "agents", None)
    result = ctx.run("--ctx-strategy=openai-agents-session")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert 'pip install "pytest-ctxeval[openai-agents]"' in output(result)
    assert_no_traceback(result)
