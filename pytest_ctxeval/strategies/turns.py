"""Helpers the strategies share: turns, safe cut points, transcripts, budgets.

A *turn* starts at a user message and runs to the next one, so an assistant
tool call and its results always fall in the same turn; cutting only at turn
starts (or moving a cut back off tool results) never splits a pair.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from .base import (
    REQUEST_OVERHEAD_TOKENS,
    BaseStrategy,
    Message,
    content_text,
    current_exchange_start,
    messages_tokens,
    split_system,
)


def user_starts(messages: list[Message]) -> list[int]:
    """Indices of the user messages: where turns begin."""
    return [i for i, m in enumerate(messages) if m.get("role") == "user"]


def safe_cut(messages: list[Message], cut: int) -> int:
    """Move ``cut`` back until ``messages[cut:]`` starts with no orphan tool result."""
    while 0 < cut < len(messages) and messages[cut].get("role") == "tool":
        cut -= 1
    return cut


def last_user_text(messages: list[Message]) -> str:
    """The user's latest question: what the agent is working on right now."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message)
    return ""


def transcript(messages: list[Message]) -> str:
    """Messages as plain text lines for a model to read (summaries, memories, search).

    Role labels carry no digits or underscores: the mock model keeps lines
    with identifiers, so a label must not make every line look important."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role", "?")
        text = content_text(message)
        if text:
            lines.append(f"[{role}] {text}")
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            lines.append(f"[{role} calls] {function.get('name')} {function.get('arguments') or ''}")
    return "\n".join(lines)


def trimmed_transcript(
    messages: list[Message], limit: int, count_tokens: Callable[[str], int]
) -> str:
    """The most recent transcript lines that fit ``limit`` tokens (LangChain
    trims a summarizer's input with ``strategy="last"``): older lines are lost."""
    kept: list[str] = []
    room = limit
    for line in reversed(transcript(messages).splitlines()):
        size = count_tokens(line) + 1
        if size > room:
            if room > 8:  # a partial line (its end): ~3 chars a token stays under room
                kept.append(line[-room * 3 :])
            break
        kept.append(line)
        room -= size
    return "\n".join(reversed(kept))


def tool_units(messages: list[Message]) -> list[list[Message]]:
    """Messages grouped so that a tool call and its results form one unit."""
    units: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "tool" and units and _awaits(units[-1], message):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _awaits(unit: list[Message], result: Message) -> bool:
    ids = {str(c.get("id")) for m in unit for c in m.get("tool_calls") or []}
    return str(result.get("tool_call_id")) in ids


def fit_budget(
    messages: list[Message],
    budget: int | None,
    count_tokens: Callable[[str], int],
    protect: int = 0,
) -> list[Message]:
    """Drop the oldest droppable messages until the window fits ``budget`` tokens.

    Pinned: the leading system messages and the current exchange.  The first
    ``protect`` messages after the system prompt (a summary, a memory) go
    last.  Tool pairs go together.  When the pinned part alone is over the
    budget, the window is the pinned part: the invariant is
    ``tokens <= max(budget, pinned tokens)``."""
    if budget is None or messages_tokens(messages, count_tokens) <= budget:
        return messages
    system, rest = split_system(messages)
    start = current_exchange_start(rest) if rest else 0
    extras, body, current = rest[:protect], rest[protect:start], rest[start:]
    if protect > start:  # the current exchange itself sits among the protected ones
        extras, body, current = [], [], rest
    # Each message is counted once: the loop subtracts, it does not re-count.
    total = messages_tokens(system + extras + current, count_tokens)
    units = [
        (unit, messages_tokens(unit, count_tokens) - REQUEST_OVERHEAD_TOKENS)
        for unit in tool_units(body)
    ]
    total += sum(cost for _, cost in units)
    kept = 0
    while kept < len(units) and total > budget:
        total -= units[kept][1]
        kept += 1
    while extras and total > budget:
        total -= messages_tokens(extras[:1], count_tokens) - REQUEST_OVERHEAD_TOKENS
        extras = extras[1:]
    return system + extras + [m for unit, _ in units[kept:] for m in unit] + current


def sorted_json(value: object) -> str:
    """Stable serialisation: the same memory always gives the same bytes (prompt caches)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1)


def check_prompt_version(strategy: str, asked: str, current: str) -> None:
    """A preset may pin the prompt version it was measured with; a changed
    prompt then fails loudly instead of silently making results incomparable."""
    if asked != current:
        raise ValueError(
            f"{strategy}: prompt_version {asked!r} is not this version's prompt ({current!r}); "
            "results from different prompt versions are not comparable"
        )


def require_at_least(strategy: str, minimum: int, **values: int) -> None:
    """Reject a parameter below ``minimum`` with a message naming it and its value."""
    for param, value in values.items():
        if value < minimum:
            raise ValueError(f"{strategy}: {param} must be >= {minimum}, got {value!r}")


class TracksUserTurns(BaseStrategy):
    """Keeps the indices of user messages as they arrive, so that a window does
    not scan the whole history on every call (1,000-turn sessions)."""

    def __init__(self) -> None:
        super().__init__()
        self._user_at: list[int] = []  # history indices of user messages

    def add(self, message: Message) -> None:
        super().add(message)
        if message.get("role") == "user":
            self._user_at.append(len(self.history) - 1)

    def end_session(self) -> None:
        super().end_session()
        self._user_at = [i for i, m in enumerate(self.history) if m.get("role") == "user"]

    def turn_count(self) -> int:
        return len(self._user_at)

    def turn_start(self, index: int, offset: int) -> int:
        """Where turn ``index`` begins, counted from ``offset``: one turn's
        start without listing them all."""
        return self._user_at[index] - offset
