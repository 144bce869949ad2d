"""Token accounting checks that must hold exactly: cumulative input tokens,
peak prompts and the prefix a provider's prompt cache could reuse."""

from __future__ import annotations

import pytest

from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm import tokens
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.schema import Scenario
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import (
    INDEX_INTRO,
    STABLE_TOOL_INTRO,
    HeadTailStrategy,
    retrieve_tool,
)
from pytest_ctxeval.strategies.sliding import SlidingStrategy


def text_of(n_tokens: int) -> str:
    """A text of exactly ``n_tokens`` tokens (repeated words merge now and
    then, so shrink until the tokenizer agrees)."""
    words = n_tokens
    while True:
        text = " ".join(["hello"] * words)
        count = tokens.count_text_tokens(text)
        if count == n_tokens:
            return text
        words -= max(1, count - n_tokens) if count > n_tokens else -1


def conversation(turns: int, system_tokens: int, tokens_per_turn: int) -> Conversation:
    messages = [{"role": "system", "content": text_of(system_tokens)}]
    for _ in range(turns):
        # The turn's new tokens arrive with the reply, after the request is made.
        messages.append({"role": "user", "content": ""})
        messages.append({"role": "assistant", "content": text_of(tokens_per_turn)})
    scenario = Scenario.model_validate({"id": "acct", "probes": [{"id": "p", "user": "q"}]})
    return Conversation(scenario=scenario, messages=messages, probes=[])


@pytest.fixture
def no_chat_overhead(monkeypatch: pytest.MonkeyPatch) -> None:
    # The check counts content tokens only; the chat format's few tokens per
    # message are a separate, provider-specific term.
    monkeypatch.setattr(tokens, "PER_MESSAGE_OVERHEAD", 0)
    monkeypatch.setattr(tokens, "PER_REQUEST_OVERHEAD", 0)


def test_token_text_helper_is_exact() -> None:
    assert tokens.count_text_tokens(text_of(3200)) == 3200


def test_full_costs_quadratic_cumulative_tokens_exactly(no_chat_overhead: None) -> None:
    trace = simulate(
        conversation(50, 4_000, 3_200),
        FullStrategy(),
        client=ModelClient("ctxeval/oracle"),
        model="ctxeval/oracle",
    )
    assert len(trace.requests) == 50
    assert trace.cumulative_input_tokens == 50 * 4_000 + (50 * 49 // 2) * 3_200 == 4_120_000
    assert trace.peak_prompt_tokens == 4_000 + 49 * 3_200


def test_full_shares_the_whole_previous_prompt_as_prefix(no_chat_overhead: None) -> None:
    trace = simulate(
        conversation(5, 100, 50),
        FullStrategy(),
        client=ModelClient("ctxeval/oracle"),
        model="ctxeval/oracle",
    )
    # Each request repeats the previous one and adds to it: all of it is cacheable.
    for before, after in zip(trace.requests, trace.requests[1:], strict=False):
        assert after.shared_prefix_tokens == before.prompt_tokens


def test_sliding_caps_the_prompt_and_grows_linearly(no_chat_overhead: None) -> None:
    trace = simulate(
        conversation(50, 4_000, 3_200),
        SlidingStrategy(turns=2),
        client=ModelClient("ctxeval/oracle"),
        model="ctxeval/oracle",
    )
    # The system prompt plus at most the previous turn's reply.
    assert trace.peak_prompt_tokens == 4_000 + 3_200
    assert trace.cumulative_input_tokens == 4_000 + 49 * (4_000 + 3_200)


# -- tools come before the messages in the prompt cache ------------------------------------

TOOL = retrieve_tool("Stored memories:\nid=m1 | position 2 | messages 1 | preview: first rows")
CHANGED_TOOL = retrieve_tool("Stored memories:\nid=m1 | position 2 | messages 1 | preview: other")
HISTORY = [{"role": "user", "content": text_of(40)}, {"role": "assistant", "content": text_of(30)}]


def test_the_shared_prefix_includes_identical_tools() -> None:
    current = [*HISTORY, {"role": "user", "content": "next"}]
    messages_only = tokens.shared_prefix_tokens(HISTORY, current)
    assert messages_only == sum(tokens.message_tokens(m) for m in HISTORY)
    with_tools = tokens.shared_prefix_tokens(
        HISTORY, current, previous_tools=[TOOL], tools=[dict(TOOL)]
    )
    assert with_tools == tokens.tools_tokens([TOOL]) + messages_only > messages_only


def test_a_changed_tool_definition_breaks_the_whole_prefix() -> None:
    current = [*HISTORY, {"role": "user", "content": "next"}]
    assert tokens.shared_prefix_tokens(HISTORY, current, previous_tools=[TOOL]) == 0
    assert tokens.shared_prefix_tokens(HISTORY, current, tools=[TOOL]) == 0
    changed = tokens.shared_prefix_tokens(
        HISTORY, current, previous_tools=[TOOL], tools=[CHANGED_TOOL]
    )
    assert changed == 0


def test_the_meter_counts_tools_into_the_prefix_only_while_they_stay_the_same() -> None:
    meter = tokens.PromptMeter()
    first, shared = meter.measure(HISTORY, [TOOL])
    assert shared == 0  # nothing before the first request
    longer = [*HISTORY, {"role": "user", "content": "next"}]
    second, shared = meter.measure(longer, [TOOL])
    assert shared == first - tokens.PER_REQUEST_OVERHEAD  # the tools and both messages
    assert second == tokens.window_tokens(longer, [TOOL])
    third, shared = meter.measure([*longer, {"role": "assistant", "content": "ok"}], [CHANGED_TOOL])
    assert shared == 0
    assert third == tokens.window_tokens(
        [*longer, {"role": "assistant", "content": "ok"}], [CHANGED_TOOL]
    )


@pytest.mark.parametrize("listing", ["message", "tool"])
def test_the_trace_keeps_the_last_requests_tools(listing: str) -> None:
    bulky = "\n".join(f"row {i}: status ok" for i in range(40))
    conv = conversation(1, 10, 5)
    conv.messages[1:1] = [
        {"role": "user", "content": "Dump the rows."},
        {"role": "assistant", "content": bulky},
    ]
    trace = simulate(
        conv,
        HeadTailStrategy(listing=listing),
        client=ModelClient("ctxeval/oracle"),
        model="ctxeval/oracle",
    )
    (tool,) = trace.last_tools
    assert tool["function"]["name"] == "retrieve_memory"
    if listing == "tool":
        assert "row" in tool["function"]["description"]  # the stored middle's preview
    else:
        # The definition never lists memories; the last window's index message does.
        assert tool == retrieve_tool(STABLE_TOOL_INTRO)
        (index,) = [m for m in trace.last_window if str(m["content"]).startswith(INDEX_INTRO)]
        assert "id=m1 |" in index["content"] and "row" in index["content"]
