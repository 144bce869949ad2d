"""The OpenAI Agents SDK's documented trimming and summarising sessions: the
window is what the session returns, through the SDK's own converter."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
from typing import Any

import pytest
from test_adapters import agent_session, fed
from test_adapters_middleware import counting_context

from pytest_ctxeval.strategies.registry import resolve
from pytest_ctxeval.strategies.window_rules import window_violations

Message = dict[str, Any]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("agents") is None,
    reason='openai-agents is not installed: pip install -e ".[openai-agents]"',
)


def chat(turns: int) -> list[Message]:
    """A system prompt and plain user/assistant turns; identifiers early on."""
    messages: list[Message] = [{"role": "system", "content": "You are a support agent."}]
    for turn in range(1, turns + 1):
        messages.append({"role": "user", "content": f"Ticket T-{turn}00 is about device D{turn}."})
        messages.append({"role": "assistant", "content": f"Noted ticket T-{turn}00."})
    messages.append({"role": "user", "content": "Which tickets did I mention?"})
    return messages


def built(spec: str, messages: list[Message]) -> tuple[Any, list[list[Message]]]:
    (strategy_spec,) = resolve(spec, preset_dirs=[])
    strategy = strategy_spec.create()
    ctx, calls = counting_context()
    strategy.setup(ctx)  # type: ignore[attr-defined]
    return fed(strategy, messages), calls


def direct(session: Any, messages: list[Message]) -> list[Message]:
    """The recipe session fed the same items, read back by the SDK's converter."""
    from pytest_ctxeval.adapters.agents_recipes import as_chat_input
    from pytest_ctxeval.adapters.openai_agents import to_items, to_messages

    for index, message in enumerate(messages):
        if message["role"] != "system":
            asyncio.run(session.add_items(to_items(message, index)))
    return to_messages([as_chat_input(item) for item in asyncio.run(session.get_items())])


@pytest.mark.parametrize("max_turns", [1, 3, 50])
def test_trimming_session_window_is_what_the_session_returns(max_turns: int) -> None:
    from pytest_ctxeval.adapters.agents_recipes import session_classes

    session = agent_session()
    strategy, calls = built(
        f"openai-agents-session(session=trimming,max_turns={max_turns})", session
    )
    window = strategy.window().messages
    trimming, _ = session_classes()
    assert window[1:] == direct(trimming("t", max_turns=max_turns), session)
    users = [m for m in window if m["role"] == "user"]
    assert len(users) == min(max_turns, 7) and window[-1] == session[-1]
    assert window[0] == session[0] and calls == []
    assert window_violations(session, strategy.window()) == []
    assert strategy.fork().window().messages == window


def test_summarizing_session_replaces_older_turns_by_the_models_summary() -> None:
    from pytest_ctxeval.adapters.agents_recipes import SHADOW_PROMPT, session_classes

    session = chat(6)
    spec = "openai-agents-session(session=summarizing,keep_last_n_turns=2,context_limit=3)"
    strategy, calls = built(spec, session)
    window = strategy.window().messages
    ctx, direct_calls = counting_context()
    assert ctx.complete is not None
    complete = ctx.complete
    _, summarizing = session_classes()

    def summarize(items: list[Message]) -> str:
        from pytest_ctxeval.adapters.agents_recipes import summary_request

        return complete(summary_request(items)).strip()

    assert window[1:] == direct(summarizing(summarize, 2, 3), session)
    assert window[1] == {"role": "user", "content": SHADOW_PROMPT}
    assert window[2]["role"] == "assistant" and "T-100" in window[2]["content"]
    assert window[-3:] == session[-3:] and calls == direct_calls and len(calls) >= 1
    before = len(calls)
    fork = strategy.fork()
    assert fork.window().messages == window and len(calls) == before  # no new summary
    assert window_violations(session, strategy.window()) == []


def test_summarizing_session_sends_tool_items_as_the_recipe_does_and_the_sdk_refuses() -> None:
    """The recipe keeps only role, content and name of an item: a function
    call becomes a user message the SDK's converter rejects."""
    spec = "openai-agents-session(session=summarizing,keep_last_n_turns=2,context_limit=3)"
    strategy, _ = built(spec, copy.deepcopy(agent_session()))
    with pytest.raises(Exception, match="Unhandled item type"):
        strategy.window()


def test_summarizing_session_parameters_are_checked() -> None:
    from pytest_ctxeval.strategies.registry import UnknownStrategyError

    bad = "openai-agents-session(session=summarizing,keep_last_n_turns=4,context_limit=3)"
    with pytest.raises(UnknownStrategyError, match="keep_last_n_turns <= context_limit"):
        resolve(bad, preset_dirs=[])
