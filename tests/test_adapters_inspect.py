"""``inspect-compaction``: Inspect AI's compaction handler, as its agent loop
calls it; each window equals what the handler returns on the same messages."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest
from test_adapters import agent_session, fed
from test_adapters_anthropic import long_results
from test_adapters_middleware import counting_context

from pytest_ctxeval.strategies.registry import UnknownStrategyError, resolve
from pytest_ctxeval.strategies.window_rules import window_violations

Message = dict[str, Any]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("inspect_ai") is None,
    reason='inspect-ai is not installed: pip install -e ".[inspect]"',
)


def chatty(turns: int) -> list[Message]:
    """Tickets said by the user, long replies with nothing worth keeping."""
    messages: list[Message] = [{"role": "system", "content": "You are a support agent."}]
    filler = "Thanks, that sounds good and I will keep it in mind as we go along together. "
    for turn in range(1, turns + 1):
        messages.append({"role": "user", "content": f"Ticket T-{turn}00 is about device D{turn}."})
        messages.append({"role": "assistant", "content": filler * 4})
    messages.append({"role": "user", "content": "Which tickets did I mention?"})
    return messages


def built(spec: str, messages: list[Message]) -> tuple[Any, list[list[Message]]]:
    (strategy_spec,) = resolve(spec, preset_dirs=[])
    strategy = strategy_spec.create()
    ctx, calls = counting_context()
    strategy.setup(ctx)  # type: ignore[attr-defined]
    return fed(strategy, messages), calls


def direct(strategy: Any, messages: list[Message]) -> tuple[list[Message], Any]:
    """Inspect's own handler called once on the same messages and prefix."""
    from inspect_ai.model import compaction

    from pytest_ctxeval.adapters.inspect_compaction import to_inspect, to_message

    conversation = [to_inspect(m, f"ctx-{i}") for i, m in enumerate(messages)]
    handler = compaction(strategy, prefix=conversation[:2], model=_model())
    sent, appended = asyncio.run(handler.compact_input(conversation))
    return [to_message(m) for m in sent], appended


def _model() -> Any:
    from inspect_ai.model import get_model

    from pytest_ctxeval.adapters.inspect_compaction import MODEL, _provider

    _provider()
    ctx, _ = counting_context()
    return get_model(MODEL, memoize=False, complete=ctx.complete, count=ctx.count_tokens)


def normal(messages: list[Message]) -> list[Message]:
    """Messages as Inspect reads them back (multi-part text joined)."""
    from pytest_ctxeval.adapters.inspect_compaction import to_inspect, to_message

    return [to_message(to_inspect(m, "")) for m in messages]


def test_trim_window_is_what_inspects_handler_returns() -> None:
    from inspect_ai.model import CompactionTrim

    session = agent_session(turns=10)
    strategy, calls = built("inspect-compaction(strategy=trim,threshold=150,preserve=0.5)", session)
    window = strategy.window().messages
    sent, appended = direct(CompactionTrim(threshold=150, preserve=0.5), session)
    assert normal(window) == sent and appended is None and calls == []
    assert len(window) < len(session) and window[-1] == session[-1]
    assert window_violations(session, strategy.window()) == []


def test_edit_clears_older_tool_results_as_inspects_handler_does() -> None:
    from inspect_ai.model import CompactionEdit

    session = long_results(agent_session(turns=10))
    strategy, _ = built("inspect-compaction(strategy=edit,threshold=600,keep_tool_uses=2)", session)
    window = strategy.window().messages
    sent, _ = direct(CompactionEdit(threshold=600, keep_tool_uses=2), session)
    assert normal(window) == sent
    edited = [m for m, o in zip(window, session, strict=True) if m != o]
    assert edited and all(m["role"] == "tool" for m in edited)
    assert window_violations(session, strategy.window()) == []


@pytest.mark.parametrize("kind", ["summary", "auto"])
def test_summary_replaces_the_conversation_with_the_models_summary(kind: str) -> None:
    from inspect_ai.model import CompactionAuto, CompactionSummary

    session = chatty(12)
    strategy, calls = built(f"inspect-compaction(strategy={kind},threshold=300)", session)
    window = strategy.window().messages
    compactor = CompactionSummary if kind == "summary" else CompactionAuto
    sent, appended = direct(compactor(threshold=300), session)
    assert normal(window) == sent and appended is not None
    # Inspect keeps the system prompt and the sample's input, then its summary
    # (written by the run's model, one counted call, Inspect's own prompt).
    assert window[:2] == session[:2] and len(window) == 3
    assert window[2]["content"].startswith("[CONTEXT COMPACTION SUMMARY]")
    assert "T-500" in window[2]["content"] and len(calls) == 1
    assert "tasked with summarizing conversations" in calls[0][-1]["content"]
    # The question went into the summary: the window rules say so.
    assert any(
        v.startswith("current-message") for v in window_violations(session, strategy.window())
    )
    # Inspect appended the summary to its conversation and goes on from it.
    strategy.add({"role": "user", "content": "And the first one?"})
    later = strategy.window().messages
    assert later[-1]["content"] == "And the first one?" and len(calls) == 1
    assert strategy.fork().window().messages == later and len(calls) == 1


def test_a_threshold_inspect_cannot_reach_is_inspects_error() -> None:
    strategy, _ = built("inspect-compaction(strategy=trim,threshold=5)", agent_session())
    with pytest.raises(RuntimeError, match="Compaction insufficient"):
        strategy.window()
    with pytest.raises(UnknownStrategyError, match="threshold must be > 0"):
        resolve("inspect-compaction(threshold=0)", preset_dirs=[])
