"""``anthropic-context-editing``: Anthropic's clear_tool_uses edit emulated
from its documented rules, and the cache breaks its activations cause."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from test_adapters import agent_session, fed

from pytest_ctxeval.llm.cache_rules import ANTHROPIC_AUTO, for_model
from pytest_ctxeval.llm.prompt_cache import PromptCache
from pytest_ctxeval.strategies.base import approximate_tokens, content_text
from pytest_ctxeval.strategies.invariant_sessions import tool_session
from pytest_ctxeval.strategies.invariants import check_invariants
from pytest_ctxeval.strategies.registry import UnknownStrategyError, resolve
from pytest_ctxeval.strategies.window_rules import window_violations

Message = dict[str, Any]
PLACEHOLDER = "[Tool result cleared by context editing]"


def built(spec: str, messages: list[Message]) -> Any:
    (strategy_spec,) = resolve(spec, preset_dirs=[])
    return fed(strategy_spec.create(), messages)


def long_results(messages: list[Message]) -> list[Message]:
    """The session with tool results worth clearing (about 60 tokens each)."""
    return [{**m, "content": m["content"] * 8} if m["role"] == "tool" else m for m in messages]


def cleared_ids(window: list[Message]) -> list[str]:
    return [
        m["tool_call_id"] for m in window if m["role"] == "tool" and m["content"] == PLACEHOLDER
    ]


def test_over_the_trigger_the_oldest_results_are_cleared_but_the_last_keep() -> None:
    session = agent_session()
    window = built("anthropic-context-editing(trigger=100,keep=2)", session).window().messages
    assert cleared_ids(window) == ["call_1", "call_2", "call_3", "call_4"]
    # Everything else is the session's own message; only the results changed.
    assert len(window) == len(session)
    for sent, original in zip(window, session, strict=True):
        if sent["content"] != PLACEHOLDER:
            assert sent is original or sent == original
    assert (
        window_violations(
            session, built("anthropic-context-editing(trigger=100)", session).window()
        )
        == []
    )


def test_under_the_trigger_the_whole_session_is_sent() -> None:
    session = agent_session()
    assert built("anthropic-context-editing", session).window().messages == session


@pytest.mark.parametrize(
    ("params", "cleared", "emptied"),
    [
        ("exclude_tools=[status]", [], []),
        ("clear_tool_inputs=true", ["call_1", "call_2", "call_3"], ["call_1", "call_2", "call_3"]),
        ("clear_tool_inputs=[lookup]", ["call_1", "call_2", "call_3"], []),
        ("trigger_type=tool_uses,trigger=5", ["call_1", "call_2", "call_3"], []),
        ("trigger_type=tool_uses,trigger=6", [], []),
    ],
)
def test_exclusions_inputs_and_the_tool_uses_trigger(
    params: str, cleared: list[str], emptied: list[str]
) -> None:
    session = agent_session()
    spec = f"anthropic-context-editing(trigger=100,{params})"
    if "trigger_type" in params:
        spec = f"anthropic-context-editing({params})"
    window = built(spec, session).window().messages
    assert cleared_ids(window) == cleared
    empty = [
        call["id"]
        for m in window
        for call in m.get("tool_calls") or []
        if call["function"]["arguments"] == "{}"
    ]
    assert empty == emptied


def test_clear_at_least_skips_an_activation_that_frees_too_little() -> None:
    session = long_results(agent_session())
    few = built("anthropic-context-editing(trigger=100,keep=2,clear_at_least=20)", session)
    assert cleared_ids(few.window().messages) == ["call_1", "call_2", "call_3", "call_4"]
    many = built("anthropic-context-editing(trigger=100,keep=2,clear_at_least=100000)", session)
    assert many.window().messages == session


def cache_breaks(spec: str) -> tuple[int, int, list[str]]:
    """(activations, requests that broke the cached prefix, the break reasons)
    of the session's calls, on Anthropic's automatic caching."""
    session = tool_session(turns=14)
    (strategy_spec,) = resolve(spec, preset_dirs=[])
    strategy: Any = strategy_spec.create()
    cache = PromptCache(
        for_model(ANTHROPIC_AUTO, "claude-sonnet-4-5"),
        lambda m: 4 + approximate_tokens(content_text(m) + json.dumps(m.get("tool_calls") or [])),
        lambda tools: 0,
    )
    for index, message in enumerate(copy.deepcopy(session)):
        strategy.add(message)
        after = session[index + 1]["role"] if index + 1 < len(session) else None
        if message["role"] == "user" or (message["role"] == "tool" and after != "tool"):
            cache.send(strategy.window().messages)
    return strategy.activations, cache.break_count, [b.reason for b in cache.breaks]


def test_each_activation_breaks_the_cached_prefix_and_clear_at_least_spaces_them() -> None:
    often, often_breaks, reasons = cache_breaks("anthropic-context-editing(trigger=1500,keep=1)")
    rare, rare_breaks, _ = cache_breaks(
        "anthropic-context-editing(trigger=1500,keep=1,clear_at_least=1200)"
    )
    never, never_breaks, _ = cache_breaks("anthropic-context-editing")
    assert (never, never_breaks) == (0, 0)  # under the default trigger: an appending prompt
    assert often >= 3 and often_breaks == often and set(reasons) == {"message_edited"}
    assert 1 <= rare < often and rare_breaks == rare


def test_the_emulation_keeps_the_invariants_and_checks_its_parameters() -> None:
    for spec in ("anthropic-context-editing(trigger=1500,keep=1)", "anthropic-context-editing"):
        (built_spec,) = resolve(spec, preset_dirs=[])
        assert check_invariants(lambda s=built_spec, **_: s.create()) == []
    with pytest.raises(UnknownStrategyError, match="keep must be >= 0"):
        resolve("anthropic-context-editing(keep=-1)", preset_dirs=[])
