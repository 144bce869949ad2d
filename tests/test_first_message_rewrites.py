"""A window whose first message alone is new on every request (the clock
``cache-hostile`` puts in the system prompt, as agents that tell the model
the date do) is priced as if each request were built afresh, and a session
of such windows costs its new messages, not requests x window."""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import fed

from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm import request_blocks
from pytest_ctxeval.llm.prompt_cache import ANTHROPIC, OPENAI, CacheRules
from pytest_ctxeval.llm.running_totals import RunningTotals
from pytest_ctxeval.messages import identical_after_first
from pytest_ctxeval.strategies.base import BaseStrategy, StrategyContext, Window
from pytest_ctxeval.strategies.cache_hostile import CacheHostileStrategy
from pytest_ctxeval.strategies.invariant_sessions import (
    chat_session,
    multi_chat_session,
    tool_session,
)

Message = dict[str, Any]

INNER = [
    ("full", {}),
    ("headtail", {"head": 10, "tail": 10}),
    ("toolprune", {"max_output_tokens": 40}),
    ("sliding", {"messages": 8}),
    ("observation-mask", {}),
]


class _Afresh(BaseStrategy):
    """Another strategy's windows with every message a new copy: nothing
    the replay could reuse from one request to the next."""

    name = "afresh"

    def __init__(self, inner: BaseStrategy) -> None:
        super().__init__()
        self.inner = inner

    def setup(self, ctx: StrategyContext) -> None:
        super().setup(ctx)
        self.inner.setup(ctx)

    def add(self, message: Message) -> None:
        super().add(message)
        self.inner.add(message)

    def end_session(self) -> None:
        self.inner.end_session()

    def window(self) -> Window:
        window = self.inner.window()
        return dataclasses.replace(window, messages=copy.deepcopy(window.messages))


class _GrowingStamp(CacheHostileStrategy):
    """A first message that grows by a word each call: its tokens change too."""

    def stamp(self) -> str:
        return "Calls so far:" + " call" * self.clock.now().second


def _sessions() -> list[tuple[list[Message], list[int]]]:
    multi = multi_chat_session()
    # The last has no system prompt: the clock becomes a first message of its own.
    return [(tool_session(14), []), (multi.messages, multi.chat_starts), (chat_session(12), [])]


def _replay(strategy: BaseStrategy, messages: list[Message], starts: list[int], rules: Any) -> Any:
    conversation = SimpleNamespace(messages=messages, session_starts=starts, recorded_windows=None)
    trace = simulate(conversation, strategy, client=None, model="ctxeval/oracle", cache_rules=rules)
    return trace.requests, trace.cache.break_count, trace.cache.breaks


@pytest.mark.parametrize(("inner", "params"), INNER, ids=[name for name, _ in INNER])
@pytest.mark.parametrize("rules", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
def test_a_new_first_message_is_priced_as_a_window_built_afresh(
    inner: str, params: dict[str, Any], rules: CacheRules
) -> None:
    for messages, starts in _sessions():
        for kind in (_GrowingStamp, CacheHostileStrategy):
            reused = _replay(kind(inner, params), messages, starts, rules)
            assert reused == _replay(_Afresh(kind(inner, params)), messages, starts, rules)
            requests, break_count, breaks = reused
            assert break_count == len(requests) - 1  # every request after the first breaks
        # Named for the clock (or, once, for headtail's memory tool, added on the way).
        assert "timestamp" in {b.reason for b in breaks}


@pytest.mark.parametrize(("inner", "params"), INNER, ids=[name for name, _ in INNER])
def test_what_cache_hostile_says_follows_its_first_message_is_never_too_much(
    inner: str, params: dict[str, Any]
) -> None:
    for messages, starts in _sessions():
        strategy = CacheHostileStrategy(inner, params)
        previous: list[Message] = []
        claims = exact = 0
        for _ in fed(strategy, messages, starts):
            window = strategy.lent_window()
            if previous:  # replay takes its word instead of comparing
                assert strategy.unchanged_prefix == 0
                claim = strategy.unchanged_after_first
                kept = identical_after_first(previous, window.messages)
                assert claim is not None and claim <= kept  # more would price a change as cached
                claims, exact = claims + 1, exact + (claim == kept)
            previous = list(window.messages)
        assert exact >= 0.8 * claims


def test_a_clock_in_the_system_prompt_costs_a_session_its_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Prefix hashes computed and running totals added, over 100 and 400
    turns: four times the turns, at most five times the work (a session
    that hashed each window again would do sixteen times)."""
    work: Counter[str] = Counter()
    chain, add = request_blocks.chain, RunningTotals.add

    def counted_chain(prefix: bytes, digest: bytes) -> bytes:
        work["hash"] += 1
        return chain(prefix, digest)

    def counted_add(totals: RunningTotals, value: int) -> None:
        work["total"] += 1
        add(totals, value)

    monkeypatch.setattr(request_blocks, "chain", counted_chain)
    monkeypatch.setattr(RunningTotals, "add", counted_add)

    def replay(turns: int) -> Counter[str]:
        work.clear()
        messages: list[Message] = [{"role": "system", "content": "You help."}]
        for turn in range(turns):
            messages.append({"role": "user", "content": f"Question {turn}?"})
            messages.append({"role": "assistant", "content": f"Answer {turn}."})
        _replay(CacheHostileStrategy(), messages, [], OPENAI)
        return Counter(work)

    short, long = replay(100), replay(400)
    for kind in ("hash", "total"):
        assert 4 * short[kind] <= long[kind] <= 5 * short[kind], (kind, short, long)
