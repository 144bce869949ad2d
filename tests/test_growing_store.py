"""Strategies whose retrievable store only grows (``rag``'s index, ``headtail``'s
kept middles) say how much of each window's store the window before listed:
the replay then counts the tokens of the new texts only, and prices every
request as it does by comparing the lists."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from conftest import fed

from pytest_ctxeval.evaluate import session_ledger
from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.messages import identical_prefix_length
from pytest_ctxeval.strategies import unchanged_prefix
from pytest_ctxeval.strategies.base import BaseStrategy
from pytest_ctxeval.strategies.headtail import HeadTailStrategy
from pytest_ctxeval.strategies.invariant_sessions import multi_chat_session, tool_session
from pytest_ctxeval.strategies.rag import RagStrategy

Message = dict[str, Any]

CASES = [
    (RagStrategy, {}),
    (RagStrategy, {"k": 2, "keep_turns": 2, "chunk_chars": 200}),
    (HeadTailStrategy, {"head": 10, "tail": 10}),
    (HeadTailStrategy, {"head": 10, "tail": 10, "listing": "tool"}),
]
IDS = ["rag", "rag-small-chunks", "headtail", "headtail-tool-listing"]


def _sessions() -> list[tuple[list[Message], list[int]]]:
    multi = multi_chat_session()
    return [(tool_session(14), []), (multi.messages, multi.chat_starts)]


@pytest.mark.parametrize(("kind", "params"), CASES, ids=IDS)
def test_what_a_window_says_of_its_store_is_exact(
    kind: type[BaseStrategy], params: dict[str, Any]
) -> None:
    listed = 0
    for messages, starts in _sessions():
        strategy = kind(**params)
        previous: list[str] = []
        for index in fed(strategy, messages, starts):
            window = strategy.window()
            claim = unchanged_prefix.unchanged_retrievable_of(strategy)
            assert claim == identical_prefix_length(previous, window.retrievable), index
            previous = list(window.retrievable)
        listed += len(previous)
    assert listed  # each strategy stored something to list


@pytest.mark.parametrize(("kind", "params"), CASES, ids=IDS)
def test_replay_with_the_strategys_word_on_its_store_prices_as_comparing_would(
    kind: type[BaseStrategy], params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay() -> list[Any]:
        return [
            simulate(
                SimpleNamespace(messages=messages, session_starts=starts, recorded_windows=None),
                kind(**params),
                client=None,
                model="ctxeval/oracle",
            ).requests
            for messages, starts in _sessions()
        ]

    def not_compared(*lists: Any) -> int:
        raise AssertionError("the ledger compared what the strategy told it")

    with monkeypatch.context() as patched:
        patched.setattr(session_ledger, "identical_prefix_length", not_compared)
        trusted = replay()
    assert any(request.stored_tokens for requests in trusted for request in requests)
    monkeypatch.setattr(unchanged_prefix, "_TRACKING", set())
    assert replay() == trusted


@pytest.mark.parametrize(("kind", "params"), CASES, ids=IDS)
def test_a_lent_window_lends_the_store_and_a_window_hands_out_a_copy(
    kind: type[BaseStrategy], params: dict[str, Any]
) -> None:
    # Copying the store for every window would cost turns x store.
    for messages, starts in _sessions():
        lending, copying = kind(**params), kind(**params)
        stores = set()
        for _ in zip(fed(lending, messages, starts), fed(copying, messages, starts), strict=True):
            lent, copied = lending.lent_window(), copying.window()
            assert lent.retrievable == copied.retrievable
            assert lent.messages == copied.messages
            stores.add(id(lent.retrievable))
        assert len(stores) == 1  # one list: the strategy's own store
        mine = copying.window().retrievable
        mine.append("added by the caller")
        assert "added by the caller" not in copying.window().retrievable
