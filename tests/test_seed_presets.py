"""The shipped presets for the settings the field reports, and the parameters
they need: per-item truncation, a message window, a capped tool output."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ctxeval.strategies.base import Message, approximate_tokens, content_text
from pytest_ctxeval.strategies.invariant_sessions import tool_session
from pytest_ctxeval.strategies.invariants import oracle_context
from pytest_ctxeval.strategies.presets import PresetFactory
from pytest_ctxeval.strategies.registry import available, resolve
from pytest_ctxeval.strategies.truncate import ITEM_CUT

SEED_PRESETS = {
    "truncate-items-100": ("truncate", {"unit": "items", "max_chars": 100}),
    "sliding-10-messages": ("sliding", {"messages": 10}),
    "rag-k5": ("rag", {"k": 5, "keep_turns": 2}),
    "compaction-tail-4-8": ("compaction-cached", {"every_turns": 4, "keep_turns": 4}),
    "toolprune-cap-1500": ("toolprune", {"max_output_tokens": 1500}),
    "toolprune-newest": ("toolprune", {"keep_last": 0}),
    "strategy-d": (
        "pipeline",
        {"stages": ["toolprune", {"compaction-cached": {"every_turns": 10, "keep_turns": 6}}]},
    ),
}


@pytest.mark.parametrize("name", sorted(SEED_PRESETS))
def test_the_seed_settings_ship_as_described_presets(name: str) -> None:
    preset = available(preset_dirs=[])[name]
    assert isinstance(preset, PresetFactory)
    assert (preset.preset.kind, preset.preset.params) == SEED_PRESETS[name]
    assert preset.preset.description


def built(name: str) -> Any:
    (spec,) = resolve(name, preset_dirs=[])
    strategy = spec.create()
    strategy.setup(oracle_context())
    return strategy


def run(strategy: Any, messages: list[Message]) -> list[Message]:
    for message in messages:
        strategy.add(message)
    return list(strategy.window().messages)


def test_per_item_truncation_cuts_every_earlier_message_and_keeps_the_rest() -> None:
    session = tool_session()
    question = {"role": "user", "content": "Which step failed? " * 20}
    shown = run(built("truncate-items-100"), [*session, question])
    assert len(shown) == len(session) + 1  # nothing dropped
    assert shown[0] == session[0] and shown[-1] == question
    for before, after in zip(session[1:], shown[1:-1], strict=True):
        text = content_text(before)
        if len(text) > 100:
            assert content_text(after) == text[:100] + ITEM_CUT
        else:
            assert after == before


def test_a_message_window_keeps_the_last_ten_messages_and_whole_tool_pairs() -> None:
    session = tool_session()
    shown = run(built("sliding-10-messages"), session[:30])
    assert shown[0] == session[0]
    kept = shown[1:]
    assert 10 <= len(kept) <= 11 and kept == session[30 - len(kept) : 30]
    assert kept[0]["role"] != "tool"  # moved back onto the call


def test_the_compaction_tail_holds_four_to_eight_turns() -> None:
    strategy = built("compaction-tail-4-8")
    raw_turns = []
    for message in tool_session(20):
        strategy.add(message)
        if message["role"] == "user":
            window = strategy.window()
            raw_turns.append(sum(1 for m in window.messages if m["role"] == "user") - 2)
    # Two user messages are the ledger and the memory once compaction has run.
    assert strategy.compactions >= 3
    assert min(raw_turns[10:]) >= 4 and max(raw_turns) <= 8


def test_the_output_cap_applies_to_the_newest_output_too() -> None:
    session = tool_session()
    longest = max(approximate_tokens(content_text(m)) for m in session if m["role"] == "tool")
    assert longest > 1500
    strategy = built("toolprune-cap-1500(max_output_tokens=300)")
    for count, message in enumerate(session, 1):
        strategy.add(message)
        if message["role"] == "tool" and count < len(session) and session[count]["role"] != "tool":
            for shown in strategy.window().messages:
                if shown["role"] == "tool":
                    assert approximate_tokens(content_text(shown)) <= 300 + 20  # + the note
    assert "output capped at 300 tokens" in str(strategy.window().messages)


def test_pruning_the_newest_output_prunes_the_current_result() -> None:
    session = tool_session()
    last_result = max(i for i, m in enumerate(session) if m["role"] == "tool")
    shown = run(built("toolprune-newest"), session[: last_result + 1])
    newest = content_text(session[last_result])
    assert shown[-1]["tool_call_id"] == session[last_result]["tool_call_id"]
    assert len(newest.splitlines()) == 120  # a file read: its first and last 20 lines stay
    assert "[… 80 lines pruned …]" in content_text(shown[-1])
    whole = run(built("toolprune"), session[: last_result + 1])
    assert content_text(whole[-1]) == newest
