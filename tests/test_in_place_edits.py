"""A strategy may edit the messages it keeps in place (it is given copies):
its token, prompt-cache and ledger figures are those of a strategy that
makes new messages with the same text."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, by_key

from pytest_ctxeval.strategies.registry import resolve

ROOT = Path(__file__).resolve().parents[1]

STRATEGIES = """
from pytest_ctxeval import BaseStrategy, Window

KEEP = 4  # the last messages stay whole; older ones are cut to their start


class InPlace(BaseStrategy):
    name = "in-place"

    def window(self):
        for message in self.history[1:-KEEP]:
            text = message.get("content")
            if isinstance(text, str) and len(text) > 80:
                message["content"] = text[:80]
        return Window(list(self.history))


class Copying(BaseStrategy):
    name = "copying"

    def window(self):
        for i, message in enumerate(self.history[1:-KEEP], start=1):
            text = message.get("content")
            if isinstance(text, str) and len(text) > 80:
                self.history[i] = {**message, "content": text[:80]}
        return Window(list(self.history))
"""


def agent_session(turns: int = 12) -> str:
    rules = " ".join(f"Rule {i}: keep service {i} healthy." for i in range(200))
    lines = ["id: agent", f"system: {rules!r}", "turns:"]
    for turn in range(turns):
        lines += [
            f"  - user: Check the traces of service {turn}.",
            "  - tool: {name: query_spans, "
            f"generate: {{kind: spans, tokens: 600, seed: {turn}}}}}",
            f"  - assistant: Done with service {turn}.",
        ]
    lines += [
        "probes:",
        '  - {id: first, user: "Which service did we check first?"}',
        '  - {id: rules, user: "What does rule 7 say?", expect: {contains: "service 7"}}',
    ]
    return "\n".join(lines) + "\n"


FIGURES = (
    "prompt_tokens",
    "cumulative_input_tokens",
    "peak_prompt_tokens",
    "cached_prefix_tokens",
    "session_input_tokens",
    "session_cached_tokens",
    "session_cache_write_tokens",
    "session_cache_hit_ratio",
    "session_prompt_tokens",
    "session_requests",
    "cache_break_count",
    "probe_cached_tokens",
    "probe_input_tokens",
)


@pytest.mark.parametrize("cache_model", ["openai", "anthropic"])
def test_editing_in_place_and_copying_give_the_same_figures(
    ctx: CtxProject, cache_model: str
) -> None:
    ctx.write("edit_strategies.py", STRATEGIES)
    ctx.scenario("agent", agent_session())
    result = ctx.run(
        "--ctx-strategy=edit_strategies:InPlace,edit_strategies:Copying",
        f"--ctx-cache-model={cache_model}",
    )
    assert result.ret in (0, 1), result.stdout.str()
    records = by_key(ctx.results())
    for probe in ("first", "rules"):
        in_place = records[("agent", "in-place", probe)]
        copying = records[("agent", "copying", probe)]
        assert in_place["error"] is None and copying["error"] is None
        for name in FIGURES:
            assert in_place[name] == copying[name], name
        # A hand check: the cache never serves more than was sent.
        assert in_place["session_cached_tokens"] <= in_place["session_input_tokens"]


# -- why the built-ins are measured without copies ---------------------------------------


def bundled_conversations() -> list[Any]:
    from pytest_ctxeval.scenario.loader import load_conversations

    files = sorted((ROOT / "scenarios").rglob("*.yaml"))
    return [
        c
        for f in files
        if not any(part.startswith("_") for part in f.relative_to(ROOT).parts)
        for c in load_conversations(f, root=ROOT / "scenarios")
    ]


def test_no_built_in_strategy_changes_a_message_after_sending_it() -> None:
    """The built-ins' windows are measured by identity: each must leave every
    message (and tool list) it sent as it was, over every bundled scenario."""
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.strategies.unchanged_prefix import keeps_sent_messages

    conversations = bundled_conversations()
    assert len(conversations) >= 30
    # Every built-in kind, and a pipeline of them.
    for spec in resolve(["all", "strategy-d"], preset_dirs=[]):
        for conversation in conversations:
            strategy = spec.create()
            assert keeps_sent_messages(strategy), spec.name
            seen: dict[int, tuple[Any, Any]] = {}
            original = strategy.window

            def watched(original: Any = original, seen: Any = seen) -> Any:
                window = original()
                for item in [*window.messages, window.tools]:
                    if id(item) not in seen:
                        seen[id(item)] = (item, copy.deepcopy(item))
                return window

            strategy.window = watched  # type: ignore[method-assign]
            client = ModelClient("ctxeval/oracle")
            simulate(conversation, strategy, client=client, model="ctxeval/oracle")
            changed = [item for item, before in seen.values() if item != before]
            assert not changed, f"{spec.name} changed what it sent ({conversation.id})"


def test_a_strategy_of_ones_own_is_measured_on_copies() -> None:
    from pytest_ctxeval.strategies.full import FullStrategy
    from pytest_ctxeval.strategies.unchanged_prefix import keeps_sent_messages

    class MyFull(FullStrategy):
        pass

    assert keeps_sent_messages(FullStrategy())
    assert not keeps_sent_messages(MyFull())
