"""The invariant suite: every registered strategy keeps it, and each check can fail."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

import pytest

from pytest_ctxeval.strategies.base import BaseStrategy, Message, Window, split_system
from pytest_ctxeval.strategies.headtail import MARKER, HeadTailStrategy, retrieve_tool
from pytest_ctxeval.strategies.invariant_sessions import default_sessions, tool_session
from pytest_ctxeval.strategies.invariants import assert_invariants, check_invariants
from pytest_ctxeval.strategies.registry import available

REGISTERED = available(preset_dirs=[])
BUDGET = 3000


def accepts_budget(factory: Any) -> bool:
    return "budget_tokens" in inspect.signature(factory).parameters


@pytest.mark.parametrize("name", sorted(REGISTERED))
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
    assert [name for name, _ in default_sessions()] == [
        "tool-session",
        "chat-no-system",
        "ends-on-tool",
    ]


def test_assert_invariants_passes_silently_for_a_good_strategy() -> None:
    assert_invariants(HeadTailStrategy, params={"head": 40, "tail": 40})


# --- deliberately broken strategies: one per check -----------------------------


class DropsSystem(BaseStrategy):
    name = "drops-system"

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
        *older, last = self.history
        note: Message = {"role": "user", "content": f"call {next(self._calls)}"}
        return Window(messages=[*older, note, last] if older else [last])


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


@pytest.mark.parametrize(
    ("strategy", "check", "detail"),
    [
        (DropsSystem, "system-prompt", "does not start with the system prompt"),
        (SplitsPairs, "tool-pairs", "without its result"),
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


def test_keep_system_false_is_allowed_to_drop_the_system_prompt() -> None:
    class Sliding(DropsSystem):
        keep_system = False

    assert check_invariants(Sliding) == []


def test_custom_sessions_replace_the_defaults() -> None:
    session = [{"role": "user", "content": "Hello there."}]
    assert check_invariants(DropsSystem, sessions=[("only-user", session)]) == []
    assert check_invariants(AltersCurrent, sessions=[("only-user", session)]) == [
        "current-message: only-user at message 1: the current user message is not the "
        "window's last message, unaltered"
    ]
