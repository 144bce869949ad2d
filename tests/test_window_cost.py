"""A turn costs what its window holds, not what the session has seen: each
strategy reads its history by position and copies only the part it shows.
The history here counts every message a slice of it copies; a strategy that
copies the whole history on every turn copies turns x session messages."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ctxeval.strategies.compaction import CachedCompactionStrategy, CompactionStrategy
from pytest_ctxeval.strategies.registry import resolve
from pytest_ctxeval.strategies.working_memory import MEMORY_ITEMS, WorkingMemory, merge

Message = dict[str, Any]


class CountingHistory(list):  # type: ignore[type-arg]
    """A history list that adds up how many messages its slices copy."""

    copied = 0

    def __getitem__(self, index: Any) -> Any:
        got = super().__getitem__(index)
        if isinstance(index, slice):
            CountingHistory.copied += len(got)
        return got


def words(text: str) -> int:
    return len(text.split())


def replay(strategy: Any, turns: int) -> int:
    """Messages copied out of the history over ``turns`` user/assistant turns."""
    from pytest_ctxeval.strategies.base import StrategyContext

    def complete(messages: list[Message]) -> str:
        return "Summary: the build passed."

    def complete_json(messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
        return {**WorkingMemory().model_dump(), "goal": "ship it"}

    strategy.setup(StrategyContext(words, complete, complete_json))
    strategy.history = CountingHistory(strategy.history)
    CountingHistory.copied = 0
    strategy.add({"role": "system", "content": "You are a coding agent."})
    for turn in range(turns):
        strategy.add({"role": "user", "content": f"Turn {turn}: please check the build."})
        strategy.window()
        strategy.add({"role": "assistant", "content": f"Checked {turn}: it passed."})
    return CountingHistory.copied


@pytest.mark.parametrize(
    "name",
    [
        "sliding",
        "sliding(messages=8)",
        "summarize(trigger_tokens=60,keep_messages=4)",
        "compaction",
        "compaction-cached",
        "rag",
    ],
)
def test_a_turn_copies_its_window_not_the_session(name: str) -> None:
    [spec] = resolve(name, preset_dirs=[])
    short = replay(spec.create(), 100)
    long = replay(spec.create(), 400)
    # Bounded windows: four times the turns copy about four times the messages
    # (a copy of the whole history each turn would copy about sixteen times).
    assert long <= 5 * short, (short, long)


def test_the_working_memory_keeps_its_latest_milestones_and_discoveries() -> None:
    memory = WorkingMemory()
    for step in range(3 * MEMORY_ITEMS):
        new = WorkingMemory(
            completed_milestones=[f"milestone {step}"], key_discoveries=[f"finding {step}"]
        )
        memory = merge(memory, new, [f"src/file_{step}.py"])
    assert len(memory.completed_milestones) == MEMORY_ITEMS
    assert memory.completed_milestones[-1] == f"milestone {3 * MEMORY_ITEMS - 1}"
    assert len(memory.key_discoveries) == MEMORY_ITEMS
    assert len(memory.modified_files) == 3 * MEMORY_ITEMS  # files: every one the tools touched


@pytest.mark.parametrize("cls", [CompactionStrategy, CachedCompactionStrategy])
def test_compaction_requests_stop_growing_with_the_session(cls: type) -> None:
    sizes: list[int] = []

    class Sizing(cls):  # type: ignore[misc, valid-type]
        def _request_text(self, old: WorkingMemory, messages: list[Message]) -> str:
            text: str = super()._request_text(old, messages)
            sizes.append(len(text))
            return text

    from pytest_ctxeval.strategies.base import StrategyContext

    step = [0]

    def complete_json(messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
        step[0] += 1
        found = [f"discovery {step[0]}-{i}: the cache key was stale" for i in range(5)]
        return {**WorkingMemory().model_dump(), "key_discoveries": found}

    strategy = Sizing()
    strategy.setup(StrategyContext(words, lambda m: "", complete_json))
    strategy.add({"role": "system", "content": "You are a coding agent."})
    for turn in range(1500):
        strategy.add({"role": "user", "content": f"Turn {turn}: go on."})
        strategy.window()
        strategy.add({"role": "assistant", "content": f"Done {turn}."})
    assert len(sizes) > 100
    # Once the memory is full, a compaction request is as long as the one before.
    assert max(sizes[-20:]) <= 1.05 * sizes[-40]
