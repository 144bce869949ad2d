"""The sessions ``check_invariants`` replays by default.

Built in code, deterministic, and big enough that every built-in strategy
actually does something under its default parameters: summaries trigger,
compaction runs twice, sub-calls happen, turns are evicted and retrieved.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

Message = dict[str, Any]


class Session(NamedTuple):
    """A named session to replay; a plain ``(name, messages)`` tuple works too."""

    name: str
    messages: list[Message]
    # Indices of the messages that open a new chat: ``end_session()`` is
    # called before each, as the harness does for multi-session scenarios.
    chat_starts: tuple[int, ...] = ()


SYSTEM = (
    "You are a coding assistant for the billing service. Never use the requests library; "
    "always use urllib3. Answer briefly."
)
CONSTRAINT = "Always keep the database port at 5432."
NEEDLE = "SPECIAL_API_KEY = 'secret-9981'"
_SERVICES = ("checkout", "catalog", "billing", "search", "accounts")


def default_sessions() -> list[Session]:
    return [
        Session("tool-session", tool_session()),
        Session("chat-no-system", chat_session()),
        Session("ends-on-tool", ends_on_tool()),
        multi_chat_session(),
    ]


def tool_session(turns: int = 14) -> list[Message]:
    return [{"role": "system", "content": SYSTEM}, *tool_turns(1, turns)]


def multi_chat_session() -> Session:
    """Three chats under one system prompt: two with tools (the first long
    enough for compaction to run inside it), then a plain one."""
    chats = [tool_turns(1, 14), tool_turns(15, 20), chat_session(3)]
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    starts: list[int] = []
    for chat in chats:
        starts.append(len(messages))
        messages.extend(chat)
    return Session("multi-chat", messages, tuple(starts[1:]))


def tool_turns(first: int, last: int) -> list[Message]:
    """Turns ``first`` to ``last``: a question, a tool call (two at turn 7),
    the results, and an answer; call ids are unique across turns."""
    messages: list[Message] = []
    for turn in range(first, last + 1):
        question = f"Step {turn}: check the {_SERVICES[turn % 5]} service."
        messages.append(
            {"role": "user", "content": question + (f" {CONSTRAINT}" if turn == 1 else "")}
        )
        if turn == 7:  # two calls in one message: both results must travel with it
            messages.append(_calls(turn, ["read_file", "query_logs"], [{"path": "src/db.py"}, {}]))
            messages.append(_result(f"call_{turn}_0", "read_file", numbered_file(120)))
            messages.append(_result(f"call_{turn}_1", "query_logs", log_with_error(200)))
        else:
            name = ("query_spans", "query_logs", "read_file", "ping")[turn % 4]
            messages.append(_calls(turn, [name], [{"day": turn}]))
            messages.append(_result(f"call_{turn}_0", name, _output(name, turn)))
        messages.append(
            {"role": "assistant", "content": f"Step {turn} done: the service looks fine."}
        )
    return messages


def chat_session(turns: int = 16) -> list[Message]:
    messages: list[Message] = []
    for turn in range(1, turns + 1):
        text = f"Turn {turn}: a note about the {_SERVICES[turn % 5]} team's lunch plans."
        if turn == 2:
            text += f" {CONSTRAINT}"
        messages.append({"role": "user", "content": text})
        messages.append({"role": "assistant", "content": f"Noted for turn {turn}. " * 20})
    return messages


def ends_on_tool() -> list[Message]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "What are the most common spans yesterday?"},
        _calls(1, ["query_spans"], [{"day": "yesterday"}]),
        _result("call_1_0", "query_spans", json_rows(150, planted_at=77)),
    ]


def json_rows(rows: int, planted_at: int | None = None) -> str:
    items = []
    for i in range(rows):
        item: dict[str, Any] = {
            "seq": i,
            "service": _SERVICES[i % 5],
            "duration_ms": (i * 37) % 900,
        }
        if i == planted_at:
            item["note"] = NEEDLE
        items.append(item)
    return json.dumps(items, indent=1)


def log_with_error(lines: int) -> str:
    out = [
        f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z INFO billing request served seq={i}"
        for i in range(lines)
    ]
    out[lines // 2] = "2026-01-01T00:01:40Z ERROR billing connection refused on port 5433"
    return "\n".join(out)


def numbered_file(lines: int) -> str:
    return "\n".join(f"{i + 1:>6}\tline {i + 1} of src/db.py: PORT = 5432" for i in range(lines))


def _output(name: str, turn: int) -> str:
    if name == "query_spans":
        return json_rows(150, planted_at=60 if turn == 4 else None)
    if name == "query_logs":
        return log_with_error(200)
    if name == "read_file":
        return numbered_file(120)
    return "pong"


def _calls(turn: int, names: list[str], args: list[dict[str, Any]]) -> Message:
    calls = [
        {
            "id": f"call_{turn}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arg, sort_keys=True)},
        }
        for i, (name, arg) in enumerate(zip(names, args, strict=True))
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _result(call_id: str, name: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
