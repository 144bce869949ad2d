"""Token accounting checks that must hold exactly (DESIGN section 9)."""

from __future__ import annotations

import pytest

from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm import tokens
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.schema import Scenario
from pytest_ctxeval.strategies.full import FullStrategy
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
