"""Invariants every context strategy must keep, checkable on your own strategy.

    from pytest_ctxeval.strategies.invariants import assert_invariants

    def test_my_strategy_keeps_the_invariants():
        assert_invariants(MyStrategy)                        # default sessions
        assert_invariants(MyStrategy, params={"budget_tokens": 3000})

Each session is replayed through two fresh instances in lockstep (calling
``end_session()`` where a session opens a new chat); at every point where an
agent calls the model (after a user message, and after the last result of a
tool call) both windows are checked:

- ``current-message``, ``system-prompt``, ``order`` and ``tool-pairs``: the
  rules of :mod:`.window_rules`, the same ones the harness checks on every
  probe window.  ``system-prompt`` is skipped only when ``params`` has
  ``keep_system=False``; a class attribute cannot exempt a strategy;
- ``budget``: a strategy with a ``budget_tokens`` attribute that is set keeps
  the window's messages (counted as ``base.messages_tokens`` does) within
  ``max(budget_tokens, tokens of the system prompt + current exchange)``;
- ``memory-markers``: every ``retrieve_memory(id="…")`` marker is answered by
  the window's tool handler with text found byte for byte in the session (and
  ``headtail``-style markers rebuild the original message exactly);
- ``deterministic``: both instances send the same window;
- ``current-message`` also fails when the strategy mutates the messages it
  was given.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from .base import (
    ContextStrategy,
    Message,
    StrategyContext,
    Window,
    approximate_tokens,
    content_text,
    current_exchange_start,
    messages_tokens,
)
from .invariant_sessions import Session, default_sessions
from .window_rules import keeps_system_prompt, window_violations

_MARKER = re.compile(r'retrieve_memory\(id="(?P<id>[^"]+)"\)')
# headtail's marker, whole: head + marker + tail must rebuild the original.
_HEADTAIL = re.compile(
    r'\n\[… \d+ chars stored as memory (?P<id>\S+); call retrieve_memory\(id="(?P=id)"\) …\]\n'
)
NOT_DETERMINISTIC = "two instances fed the same messages sent different windows"
MAX_PER_CHECK = 3  # a broken strategy breaks everywhere; a few examples are enough


def oracle_context() -> StrategyContext:
    """A model-free context: chars/4 tokens, and the oracle mock called in-process."""
    from ..llm import oracle, structured

    def complete(messages: list[Message]) -> str:
        return oracle.respond(messages).content or ""

    def complete_json(messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
        return dict(structured.fill(messages, schema))

    return StrategyContext(approximate_tokens, complete, complete_json)


def check_invariants(
    strategy_factory: Callable[..., ContextStrategy],
    sessions: Sequence[Session | tuple[str, list[Message]]] | None = None,
    *,
    params: dict[str, Any] | None = None,
    ctx: StrategyContext | None = None,
) -> list[str]:
    """Violations, as ``"check: session at message N: detail"``; empty when all hold.

    ``sessions``: ``(name, messages)`` tuples or :class:`Session` (which can
    mark where new chats begin); default: the built-in sessions."""
    ctx = ctx or oracle_context()
    params = params or {}
    keep_system = keeps_system_prompt(params)
    found: dict[str, list[str]] = {}
    for entry in sessions if sessions is not None else default_sessions():
        name, messages, chat_starts = Session(*entry)
        pristine = copy.deepcopy(messages)
        first, second = (_fresh(strategy_factory, params, ctx) for _ in range(2))
        for index, message in enumerate(messages):
            if index in chat_starts:
                for strategy in (first, second):
                    _end_session(strategy)
            first.add(message)
            second.add(copy.deepcopy(message))
            if not _calls_model_after(messages, index):
                continue
            window, twin = first.window(), second.window()
            where = f"{name} at message {index + 1}"
            seen = messages[: index + 1]
            for check, problem in _problems(first, window, twin, seen, ctx, keep_system):
                found.setdefault(check, []).append(f"{check}: {where}: {problem}")
        if messages != pristine:
            found.setdefault("current-message", []).append(
                f"current-message: {name}: the strategy mutated the messages it was given"
            )
    return [v for check in sorted(found) for v in found[check][:MAX_PER_CHECK]]


def assert_invariants(strategy_factory: Callable[..., ContextStrategy], **kwargs: Any) -> None:
    """``check_invariants`` for pytest: fails with every violation listed."""
    violations = check_invariants(strategy_factory, **kwargs)
    if violations:
        raise AssertionError("strategy invariants violated:\n" + "\n".join(violations))


def _fresh(
    factory: Callable[..., ContextStrategy], params: dict[str, Any], ctx: StrategyContext
) -> Any:
    strategy = factory(**params)
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        setup(ctx)
    return strategy


def _end_session(strategy: Any) -> None:
    end_session = getattr(strategy, "end_session", None)
    if callable(end_session):
        end_session()


def _calls_model_after(messages: list[Message], index: int) -> bool:
    role = messages[index].get("role")
    after = messages[index + 1].get("role") if index + 1 < len(messages) else None
    return role == "user" or (role == "tool" and after != "tool")


def _problems(
    strategy: Any,
    window: Window,
    twin: Window,
    seen: list[Message],
    ctx: StrategyContext,
    keep_system: bool,
) -> list[tuple[str, str]]:
    rules = window_violations(seen, window, keep_system=keep_system)
    found = [
        ("budget", _budget_problems(strategy, window.messages, seen, ctx)),
        ("memory-markers", _marker_problems(window, seen)),
        ("deterministic", [] if _dump(window) == _dump(twin) else [NOT_DETERMINISTIC]),
    ]
    checks = [(rule, detail) for rule, _, detail in (v.partition(": ") for v in rules)]
    return checks + [(check, problem) for check, problems in found for problem in problems]


def _budget_problems(
    strategy: Any, shown: list[Message], seen: list[Message], ctx: StrategyContext
) -> list[str]:
    budget = getattr(strategy, "budget_tokens", None)
    if budget is None:
        return []
    # What no strategy may drop: the system prompt and the current exchange.
    pinned = seen[:1] if seen[0].get("role") == "system" else []
    pinned += seen[current_exchange_start(seen) :]
    limit = max(budget, messages_tokens(pinned, ctx.count_tokens))
    tokens = messages_tokens(shown, ctx.count_tokens)
    if tokens > limit:
        return [f"{tokens} tokens, over the budget of {budget} (limit {limit})"]
    return []


def _marker_problems(window: Window, seen: list[Message]) -> list[str]:
    originals = [content_text(m) for m in seen]
    problems = []
    for message in window.messages:
        text = content_text(message)
        for match in _MARKER.finditer(text):
            memory_id = match.group("id")
            if window.tool_handler is None:
                problems.append(f"marker {memory_id} but the window offers no tool to retrieve it")
                continue
            stored = window.tool_handler("retrieve_memory", {"id": memory_id})
            if not stored or not any(stored in original for original in originals):
                problems.append(f"memory {memory_id} does not return original text byte for byte")
                continue
            whole = _HEADTAIL.search(text)
            if whole and whole.group("id") == memory_id:
                rebuilt = text[: whole.start()] + stored + text[whole.end() :]
                if rebuilt not in originals:
                    problems.append(f"memory {memory_id} does not rebuild its original message")
    return problems


def _dump(window: Window) -> str:
    return json.dumps([window.messages, window.tools], sort_keys=True, default=str)
