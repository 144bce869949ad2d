"""A long session under ``headtail`` costs its new messages, not a copy of the
whole window per turn: the replay borrows the strategy's own list (a lent
window) and copies it only where it keeps it. The figures are the ones a
strategy that copies every window gets."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from inline_scenarios import parse_inline

from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm.mock_client import model_client
from pytest_ctxeval.llm.tokens import PromptMeter
from pytest_ctxeval.strategies.base import Message
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import HeadTailStrategy

LONG = "The deploy notes say: " + "step by step, " * 30 + "and the staging port is 5433."


def session_yaml(turns: int) -> str:
    lines = ["id: lent", "system: You are a helpful assistant.", "turns:"]
    for turn in range(turns):
        # Now and then a long message: headtail moves its middle to memory,
        # so its memory listing shows up in the window (a copy of the kept list).
        text = LONG if turn % 7 == 3 else f"Turn {turn}: the code is c{turn * 7}."
        lines += [f"  - user: '{text}'", f"  - assistant: 'Noted {turn}.'"]
    lines += [
        "probes:",
        "  - id: port",
        "    user: Which port does staging use?",
        "    expect: {contains: '5433'}",
    ]
    return "\n".join(lines) + "\n"


class CopyingHeadTail(HeadTailStrategy):
    """headtail as any other strategy is replayed: not taken at its word, no lending."""


def test_a_meter_fed_one_list_changed_in_place_counts_as_one_fed_copies() -> None:
    windows: list[list[Message]] = []
    messages: list[Message] = [{"role": "system", "content": "You help."}]
    for turn in range(6):
        messages.append({"role": "user", "content": f"question {turn} " * (turn + 1)})
        if turn == 3:  # an earlier message shown shortened from now on
            messages[1] = {"role": "user", "content": "question 0, shortened"}
        windows.append(list(messages))
    copies, lent = PromptMeter(), PromptMeter()
    one_list: list[Message] = []
    for window in windows:
        one_list[:] = window  # the same list object every time, changed in place
        assert lent.measure(one_list) == copies.measure(list(window))


@pytest.mark.parametrize("budget", [None, 120])
def test_headtail_lends_one_list_that_matches_its_window(budget: int | None) -> None:
    strategy = HeadTailStrategy(budget_tokens=budget)
    twin = HeadTailStrategy(budget_tokens=budget)
    strategy.add({"role": "system", "content": "You help."})
    twin.add({"role": "system", "content": "You help."})
    lists = set()
    for turn in range(40):
        for message in (
            {"role": "user", "content": LONG if turn % 9 == 4 else f"Turn {turn}."},
            {"role": "assistant", "content": f"Noted {turn}."},
        ):
            strategy.add(dict(message))
            twin.add(dict(message))
        lent = strategy.lent_window()
        copied = twin.window()
        assert lent.messages == copied.messages
        assert lent.tools == copied.tools
        if not strategy._listing:
            lists.add(id(lent.messages))
    # Without a listing to insert, every lent window was the strategy's own list.
    assert len(lists) <= 2  # before and after the first eviction rebuilds it
    # window() still hands out a list of the caller's own.
    mine = strategy.window().messages
    mine.append({"role": "user", "content": "appended by the caller"})
    assert strategy.window().messages != mine


@pytest.mark.parametrize("budget", [None, 150])
def test_the_replay_of_a_lending_strategy_gives_the_figures_of_one_that_copies(
    budget: int | None,
) -> None:
    conversation = parse_inline(session_yaml(60))[0]
    client = model_client("ctxeval/oracle")
    forks = {len(conversation.messages) // 2}

    def replay(strategy: Any) -> Any:
        model = "ctxeval/oracle"
        return simulate(conversation, strategy, client=client, model=model, fork_at=forks)

    lending = replay(HeadTailStrategy(budget_tokens=budget))
    copying = replay(CopyingHeadTail(budget_tokens=budget))
    assert [dataclasses.asdict(r) for r in lending.requests] == [
        dataclasses.asdict(r) for r in copying.requests
    ]
    assert lending.last_window == copying.last_window
    fork, twin_fork = lending.forks[min(forks)], copying.forks[min(forks)]
    assert fork.last_window == twin_fork.last_window
    # What the trace keeps is its own: the strategy's next window leaves it as it was.
    kept = list(lending.last_window)
    lending.strategy.add({"role": "user", "content": "one more"})
    lending.strategy.lent_window()
    assert lending.last_window == kept


def assert_same_replay(lending: Any, copying: Any, fork: int) -> None:
    """The lending replay's figures and forks are the copying one's, and what
    its trace keeps stays as it was when the strategy builds its next window."""
    assert [dataclasses.asdict(r) for r in lending.requests] == [
        dataclasses.asdict(r) for r in copying.requests
    ]
    assert lending.last_window == copying.last_window
    assert lending.forks[fork].last_window == copying.forks[fork].last_window
    kept = list(lending.last_window)
    lending.strategy.add({"role": "user", "content": "one more"})
    lending.strategy.lent_window()
    assert lending.last_window == kept


class CopyingFull(FullStrategy):
    """full as any other strategy is replayed: not taken at its word, no lending."""


def test_full_lends_one_list_that_matches_its_window_after_revisions() -> None:
    strategy, twin = FullStrategy(), FullStrategy()
    lists = set()
    for turn in range(30):
        for message in (
            {"role": "user", "content": f"Turn {turn}."},
            {"role": "assistant", "content": f"Noted {turn}."},
        ):
            strategy.add(dict(message))
            twin.add(dict(message))
        if turn % 10 == 5:  # a pipeline's earlier stage condensed an old message
            for one in (strategy, twin):
                one.revise(turn, {"role": "user", "content": f"condensed {turn}"})
        lent = strategy.lent_window()
        assert lent.messages == twin.window().messages
        assert strategy.unchanged_prefix == twin.unchanged_prefix
        lists.add(id(lent.messages))
    assert len(lists) == 1  # one list, brought up to date in place: no copy per turn
    mine = strategy.window().messages
    mine.append({"role": "user", "content": "appended by the caller"})
    assert strategy.lent_window().messages != mine


def test_the_replay_of_full_lending_gives_the_figures_of_full_copying() -> None:
    conversation = parse_inline(session_yaml(60))[0]
    client = model_client("ctxeval/oracle")
    forks = {len(conversation.messages) // 2}

    def replay(strategy: Any) -> Any:
        model = "ctxeval/oracle"
        return simulate(conversation, strategy, client=client, model=model, fork_at=forks)

    lending, copying = replay(FullStrategy()), replay(CopyingFull())
    assert_same_replay(lending, copying, min(forks))


def tool_session_yaml(turns: int) -> str:
    lines = ["id: tools", "system: You are a coding agent.", "turns:"]
    for turn in range(turns):
        lines += [
            f"  - user: Check the traces of service {turn}.",
            "  - tool: {name: query_spans, "
            f"generate: {{kind: spans, tokens: 300, seed: {turn}}}}}",
            f"  - assistant: Done with service {turn}.",
        ]
    lines += [
        "probes:",
        "  - id: last",
        "    user: Which service did you check last?",
        f"    expect: {{contains: 'service {turns - 1}'}}",
    ]
    return "\n".join(lines) + "\n"


TOOL_RESULT_STRATEGIES = ["toolprune", "observation-mask", "subagent"]


@pytest.mark.parametrize("name", TOOL_RESULT_STRATEGIES)
def test_tool_result_strategies_lend_one_list_that_matches_their_window(name: str) -> None:
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_inline(tool_session_yaml(20))[0]
    [spec] = resolve(name, preset_dirs=[])
    strategy, twin = spec.create(), spec.create()
    lists = set()
    for message in conversation.messages:
        strategy.add(dict(message))
        twin.add(dict(message))
        lent = strategy.lent_window()
        assert lent.messages == twin.window().messages
        assert strategy.unchanged_prefix == twin.unchanged_prefix
        lists.add(id(lent.messages))
    assert len(lists) == 1  # brought up to date in place: no copy of the window per turn


@pytest.mark.parametrize("name", TOOL_RESULT_STRATEGIES)
def test_the_replay_of_a_lending_tool_result_strategy_gives_the_copying_figures(
    name: str,
) -> None:
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_inline(tool_session_yaml(30))[0]
    client = model_client("ctxeval/oracle")
    forks = {len(conversation.messages) // 2}
    [spec] = resolve(name, preset_dirs=[])
    lending_strategy = spec.create()
    cls = type(lending_strategy)
    copying_strategy = type("Copying" + cls.__name__, (cls,), {})()  # not marked: copies

    def replay(strategy: Any) -> Any:
        model = "ctxeval/oracle"
        return simulate(conversation, strategy, client=client, model=model, fork_at=forks)

    lending, copying = replay(lending_strategy), replay(copying_strategy)
    assert_same_replay(lending, copying, min(forks))
