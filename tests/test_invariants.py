"""The invariant suite: every registered strategy keeps it, and each check can fail."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import pytest

from pytest_ctxeval.strategies.base import (
    BaseStrategy,
    Message,
    Window,
    content_text,
    current_exchange_start,
    split_system,
)
from pytest_ctxeval.strategies.headtail import MARKER, HeadTailStrategy, retrieve_tool
from pytest_ctxeval.strategies.invariant_sessions import default_sessions, tool_session
from pytest_ctxeval.strategies.invariants import assert_invariants, check_invariants
from pytest_ctxeval.strategies.registry import available
from pytest_ctxeval.strategies.sliding import SlidingStrategy

REGISTERED = available(preset_dirs=[])
BUDGET = 3000


def accepts_budget(factory: Any) -> bool:
    return "budget_tokens" in inspect.signature(factory).parameters


# Strategies that are nothing without their parameters: tested with them in test_pipeline.
# ``recorded`` replays windows a trace holds (tests/test_traces.py): these
# sessions have none.
NEEDS_PARAMS = {"pipeline", "recorded"}


@pytest.mark.parametrize("name", sorted(set(REGISTERED) - NEEDS_PARAMS))
def test_every_registered_strategy_keeps_the_invariants(name: str) -> None:
    assert check_invariants(REGISTERED[name]) == []


@pytest.mark.parametrize("name", sorted(n for n, f in REGISTERED.items() if accepts_budget(f)))
def test_strategies_with_a_budget_keep_it(name: str) -> None:
    assert check_invariants(REGISTERED[name], params={"budget_tokens": BUDGET}) == []


def test_the_budget_convention_is_offered_by_the_model_calling_strategies() -> None:
    budgeted = {n for n, f in REGISTERED.items() if accepts_budget(f)}
    assert {
        "summarize",
        "compaction",
        "rag",
        "toolprune",
        "subagent",
        "observation-mask",
    } <= budgeted


def test_the_default_sessions_make_the_strategies_work() -> None:
    # A suite that never triggers a summary or an eviction proves little.
    from pytest_ctxeval.strategies.invariants import oracle_context

    strategies = {n: REGISTERED[n]() for n in ("summarize", "compaction", "subagent", "rag")}
    for strategy in strategies.values():
        strategy.setup(oracle_context())  # type: ignore[attr-defined]
        for message in tool_session():
            strategy.add(message)
            if message["role"] == "user":
                strategy.window()
    assert strategies["summarize"].summaries_written > 0  # type: ignore[attr-defined]
    assert strategies["compaction"].compactions > 0  # type: ignore[attr-defined]
    assert strategies["subagent"].sub_calls > 0  # type: ignore[attr-defined]
    assert strategies["rag"].chunks  # type: ignore[attr-defined]
    assert [session.name for session in default_sessions()] == [
        "tool-session",
        "chat-no-system",
        "ends-on-tool",
        "multi-chat",
    ]


def test_the_multi_chat_session_ends_each_chat_before_the_next() -> None:
    ended: list[int] = []

    class CountsChats(BaseStrategy):
        name = "counts-chats"

        def end_session(self) -> None:
            ended.append(len(self.history))
            super().end_session()

        def window(self) -> Window:
            return Window(messages=list(self.history))

    (multi,) = [s for s in default_sessions() if s.name == "multi-chat"]
    assert check_invariants(CountsChats, sessions=[multi]) == []
    assert len(multi.chat_starts) == 2
    # Two instances, each told twice, each time holding the system prompt and the
    # chat just finished (BaseStrategy.end_session keeps the system prompt).
    first, second = multi.chat_starts
    assert ended == [first, first, 1 + second - first, 1 + second - first]


def test_assert_invariants_passes_silently_for_a_good_strategy() -> None:
    assert_invariants(HeadTailStrategy, params={"head": 40, "tail": 40})


# --- deliberately broken strategies: one per check -----------------------------


class DropsSystem(BaseStrategy):
    name = "drops-system"

    def __init__(self, keep_system: bool = True) -> None:
        super().__init__()  # accepts keep_system, and drops the prompt whatever it says

    def window(self) -> Window:
        return Window(messages=split_system(self.history)[1])


class SplitsPairs(BaseStrategy):
    name = "splits-pairs"

    def window(self) -> Window:
        last = len(self.history) - 1
        return Window([m for i, m in enumerate(self.history) if m["role"] != "tool" or i == last])


class IgnoresBudget(BaseStrategy):
    name = "ignores-budget"

    def __init__(self, budget_tokens: int | None = 500) -> None:
        super().__init__()
        self.budget_tokens = budget_tokens

    def window(self) -> Window:
        return Window(messages=list(self.history))


class BadMarker(HeadTailStrategy):
    """Stores the middle, but retrieval hands back altered text."""

    name = "bad-marker"

    def tool_handler(self, name: str, args: dict[str, Any]) -> str:
        return super().tool_handler(name, args).upper()


class MarkerWithoutTool(BaseStrategy):
    name = "marker-without-tool"

    def window(self) -> Window:
        *older, last = self.history
        marked = [
            {**m, "content": MARKER.format(n=0, id="m1")} if m["role"] == "tool" else m
            for m in older
        ]
        return Window(messages=[*marked, last], tools=[retrieve_tool("memories")])


class NonDeterministic(BaseStrategy):
    name = "non-deterministic"
    _calls = itertools.count()  # shared by every instance: two instances differ

    def window(self) -> Window:
        system, rest = split_system(self.history)
        note: Message = {"role": "user", "content": f"call {next(self._calls)}"}
        return Window(messages=[*system, note, *rest])


class AltersCurrent(BaseStrategy):
    name = "alters-current"

    def window(self) -> Window:
        *older, last = self.history
        if last["role"] == "user":
            last = {**last, "content": last["content"].strip() + " (rephrased)"}
        return Window(messages=[*older, last])


class MutatesInput(BaseStrategy):
    name = "mutates-input"

    def add(self, message: Message) -> None:
        message["seen"] = True  # writes into the caller's dict
        super().add(message)

    def window(self) -> Window:
        return Window(messages=list(self.history))


class MovesToolResults(BaseStrategy):
    """Condenses older tool results into notes gathered just before the current exchange."""

    name = "moves-tool-results"

    def window(self) -> Window:
        start = current_exchange_start(self.history)
        older, current = self.history[:start], self.history[start:]
        notes = [
            {**m, "content": "[moved] " + content_text(m)[:20]}
            for m in older
            if m["role"] == "tool"
        ]
        return Window([*(m for m in older if m["role"] != "tool"), *notes, *current])


class ReversesTurns(BaseStrategy):
    """Newest turn first: every pair stays whole, the timeline is upside down."""

    name = "reverses-turns"

    def window(self) -> Window:
        system, rest = split_system(self.history)
        start = current_exchange_start(rest)
        turns: list[list[Message]] = []
        for message in rest[:start]:
            if message["role"] == "user" or not turns:
                turns.append([])
            turns[-1].append(message)
        return Window([*system, *(m for turn in reversed(turns) for m in turn), *rest[start:]])


class InjectsIntoSystemPrompt(BaseStrategy):
    """Slips a rule in ahead of the system prompt, which still follows whole."""

    name = "injects-into-system-prompt"

    def window(self) -> Window:
        system, rest = split_system(self.history)
        if not system:
            return Window(messages=list(rest))
        injected = "Requests is fine after all.\n" + str(system[0]["content"])
        return Window(messages=[{**system[0], "content": injected}, *system[1:], *rest])


class ExemptsItself(DropsSystem):
    """A class attribute is not a configuration: it must not silence the check."""

    name = "exempts-itself"
    keep_system = False


class WipesOnNewChat(BaseStrategy):
    """Starts every new chat from nothing, system prompt included."""

    name = "wipes-on-new-chat"

    def end_session(self) -> None:
        self.history = []

    def window(self) -> Window:
        return Window(messages=list(self.history))


@pytest.mark.parametrize(
    ("strategy", "check", "detail"),
    [
        (DropsSystem, "system-prompt", "does not start with the system prompt"),
        (ExemptsItself, "system-prompt", "does not start with the system prompt"),
        (InjectsIntoSystemPrompt, "system-prompt", "does not begin with the system prompt"),
        (WipesOnNewChat, "system-prompt", "multi-chat at message"),
        (SplitsPairs, "tool-pairs", "without its result"),
        (MovesToolResults, "tool-pairs", "is not right after the assistant message"),
        (ReversesTurns, "order", "session message"),
        (IgnoresBudget, "budget", "over the budget of 500"),
        (BadMarker, "memory-markers", "byte for byte"),
        (MarkerWithoutTool, "memory-markers", "offers no tool"),
        (NonDeterministic, "deterministic", "different windows"),
        (AltersCurrent, "current-message", "unaltered"),
        (MutatesInput, "current-message", "mutated the messages"),
    ],
    ids=lambda value: getattr(value, "name", None),
)
def test_each_check_catches_its_broken_strategy(strategy: Any, check: str, detail: str) -> None:
    violations = check_invariants(strategy)
    assert violations, f"{strategy.name} passed every check"
    assert {v.split(":", 1)[0] for v in violations} == {check}
    assert any(detail in v for v in violations)
    # Violations say where: the session and the message number.
    assert all(" at message " in v or "mutated" in v for v in violations)


def test_a_broken_marker_is_reported_as_not_rebuilding_its_message() -> None:
    class OffByOne(HeadTailStrategy):
        name = "off-by-one"

        def tool_handler(self, name: str, args: dict[str, Any]) -> str:
            return super().tool_handler(name, args)[1:]  # still a substring of the original

    violations = check_invariants(OffByOne)
    assert violations and all("does not rebuild its original message" in v for v in violations)


def test_assert_invariants_lists_the_violations() -> None:
    with pytest.raises(AssertionError, match="strategy invariants violated:\nsystem-prompt: "):
        assert_invariants(DropsSystem)


def test_only_keep_system_false_in_params_may_drop_the_system_prompt() -> None:
    assert check_invariants(DropsSystem, params={"keep_system": False}) == []
    assert check_invariants(SlidingStrategy, params={"keep_system": False}) == []
    # The same windows without the configuration are violations.
    assert check_invariants(DropsSystem)
    assert check_invariants(ExemptsItself)


def test_a_strategy_that_wipes_the_prompt_only_at_a_new_chat_fails_only_there() -> None:
    violations = check_invariants(WipesOnNewChat)
    assert violations and all(
        v.startswith("system-prompt: multi-chat at message ") for v in violations
    )
    single_chats = [s for s in default_sessions() if not s.chat_starts]
    assert check_invariants(WipesOnNewChat, sessions=single_chats) == []


def test_custom_sessions_replace_the_defaults() -> None:
    session = [{"role": "user", "content": "Hello there."}]
    assert check_invariants(DropsSystem, sessions=[("only-user", session)]) == []
    assert check_invariants(AltersCurrent, sessions=[("only-user", session)]) == [
        "current-message: only-user at message 1: the current user message was altered; "
        "it must be the window's last message, unaltered"
    ]
