"""OpenAI-style message lists -> scenario turns, cut at the last user message.

Shared by the formats that carry chat-completions messages (openai-jsonl,
multichallenge, tau-bench)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ._common import TranscriptError, Where, content_text, type_name

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


@dataclass
class Session:
    system: str | None
    turns: list[dict[str, Any]]
    probe: str  # the last user message
    dropped: int  # messages after the probe, left out
    tool_outputs: list[tuple[str, str]] = field(default_factory=list)  # (tool name, output)
    tool_turns: list[int] = field(default_factory=list)  # index in ``turns`` of each output
    # User messages after the probe (they ask nothing: goodbyes), left out.
    later_users: int = 0


def message_numbers(turns: list[dict[str, Any]]) -> list[int]:
    """The 1-based message number each turn becomes when the scenario is
    built: a tool output that answers no pending call gets an assistant call
    made up for it first, so it lands one message later."""
    numbers: list[int] = []
    pending: list[str] = []
    count = 0
    for turn in turns:
        if "tool" in turn:
            name = turn["tool"]["name"]
            if name in pending:
                pending.remove(name)
            else:
                count += 1
        elif "tool_calls" in turn:
            pending = [call["name"] for call in turn["tool_calls"]]
        count += 1
        numbers.append(count)
    return numbers


def split_at_last_user(
    messages: Any,
    source: str,
    where: Where,
    key: str,
    *,
    worth_asking: Callable[[str], bool] | None = None,
    never: Callable[[str], bool] | None = None,
) -> Session:
    """The turns before the last user message, and that message as the probe.
    ``key`` names the field holding the messages, for error text;
    ``worth_asking``: only a user message it accepts can be the probe (the
    last one, when it accepts none, but never one ``never`` accepts)."""
    if not isinstance(messages, list):
        raise TranscriptError(
            source, where, f"{key}: expected a list of messages, got {type_name(messages)}"
        )
    roles = [_role(m, source, where, f"{key}[{i}]") for i, m in enumerate(messages)]
    if "user" not in roles:
        raise TranscriptError(source, where, f"{key}: no user message to use as the probe")
    users = [i for i, role in enumerate(roles) if role == "user"]
    asked = [i for i in users if worth_asking is None or worth_asking(_text(messages[i]))]
    if not asked and never is not None:
        users = [i for i in users if not never(_text(messages[i]))]
        if not users:
            raise TranscriptError(source, where, f"{key}: no user message asks anything")
    last = (asked or users)[-1]
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    session = Session(
        None, turns, content_text(messages[last].get("content")), len(messages) - last - 1
    )
    session.later_users = sum(1 for i, role in enumerate(roles) if role == "user" and i > last)
    call_names: dict[str, str] = {}  # tool call id -> tool name, for tool results
    for i, (message, role) in enumerate(zip(messages[:last], roles[:last], strict=True)):
        text = content_text(message.get("content"))
        if role in ("system", "developer"):
            if not turns:
                system.append(text)
            else:
                # The schema has no mid-session system turn; keep the text in place.
                turns.append({"user": f"[system] {text}"})
        elif role == "user":
            turns.append({"user": text})
        elif role == "assistant":
            turns.append(_assistant(message, text, call_names, source, where, f"{key}[{i}]"))
        else:  # tool, function
            call_id = message.get("tool_call_id")
            name = call_names.get(str(call_id)) if call_id is not None else None
            name = name or _str_or_none(message.get("name")) or "tool"
            session.tool_turns.append(len(turns))
            turns.append({"tool": {"name": name, "output": text}})
            session.tool_outputs.append((name, text))
    session.system = "\n\n".join(system) if system else None
    return session


def chat_scenario(
    scenario_id: str,
    session: Session,
    source: str,
    where: Where,
    fmt: str,
    *,
    description: str = "",
    tags: list[str] | None = None,
    probes: list[dict[str, Any]] | None = None,
    needles: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A scenario from a chat cut at its last user message; that message is
    the first probe, scored against the full-context answer."""
    origin = f"Imported from {PurePath(source).name} {where.describe()} ({fmt})"
    dropped = f"; {session.dropped} message(s) after the probe left out" if session.dropped else ""
    data: dict[str, Any] = {
        "id": scenario_id,
        "description": f"{description}\n{origin}{dropped}."
        if description
        else f"{origin}{dropped}.",
        "tags": ["imported", fmt, *(tags or [])],
    }
    if session.system is not None:
        data["system"] = session.system
    data["turns"] = session.turns
    if needles:
        data["needles"] = needles
    data["probes"] = [{"id": "last-user", "user": session.probe}, *(probes or [])]
    return data


def _text(message: dict[str, Any]) -> str:
    return content_text(message.get("content"))


def _role(message: Any, source: str, where: Where, loc: str) -> str:
    if not isinstance(message, dict):
        raise TranscriptError(
            source, where, f"{loc}: expected a message object, got {type_name(message)}"
        )
    role = message.get("role")
    if not isinstance(role, str):
        raise TranscriptError(source, where, f"{loc}: missing 'role'")
    role = role.lower()
    if role not in ROLES:
        raise TranscriptError(
            source,
            where,
            f"{loc}: unknown role {message['role']!r}; expected one of {', '.join(ROLES)}",
        )
    return role


def _assistant(
    message: dict[str, Any],
    text: str,
    call_names: dict[str, str],
    source: str,
    where: Where,
    loc: str,
) -> dict[str, Any]:
    raw_calls = message.get("tool_calls")
    if raw_calls is None and isinstance(message.get("function_call"), dict):
        raw_calls = [{"function": message["function_call"]}]  # the legacy single-call shape
    if not raw_calls:
        return {"assistant": text}
    if not isinstance(raw_calls, list):
        raise TranscriptError(
            source, where, f"{loc}.tool_calls: expected a list, got {type_name(raw_calls)}"
        )
    calls = []
    for j, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise TranscriptError(
                source, where, f"{loc}.tool_calls[{j}]: expected an object, got {type_name(raw)}"
            )
        # Chat-completions nest name/arguments under "function"; some exports flatten them.
        fn = raw["function"] if isinstance(raw.get("function"), dict) else raw
        name = _str_or_none(fn.get("name")) or "tool"
        call: dict[str, Any] = {}
        call_id = _str_or_none(raw.get("id"))
        if call_id is not None:
            call["id"] = call_id
            call_names[call_id] = name
        call["name"] = name
        call["args"] = parse_args(fn.get("arguments", fn.get("args")))
        calls.append(call)
    # An empty content next to tool calls is the usual shape; keep it null, not "".
    return {"assistant": text or None, "tool_calls": calls}


def parse_args(value: Any) -> dict[str, Any]:
    """Tool arguments as a mapping; anything that is not a JSON object is
    kept verbatim under ``raw`` so nothing is lost."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {"raw": value}
    return {"raw": json.dumps(value, ensure_ascii=False)}


def _str_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)
