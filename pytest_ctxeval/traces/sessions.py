"""Sessions rebuilt from chat calls, and the scenarios made of them.

Calls are grouped by conversation (session id, else trace) and ordered by
time.  Each call's input is a window production sent; the session is the
union of every window's messages and every reply, a message that several
windows repeat counted once (matched in order, by role, text and tool-call
ids), so a message that production later dropped from its windows is still
in the session.  Each call's input is then recorded as the window sent at
its point of the session: after the session message its input ends with."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ..recorded_windows import RecordedWindow
from ..scenario.importers._common import EVIDENCE_PREFIX, Draft, TranscriptError, Where
from ..scenario.importers._messages import chat_scenario, message_numbers, split_at_last_user
from ..scenario.importers.writer import slugify
from .calls import ChatCall, Message

# A value of a tool output that a later answer repeats: that output was used.
# Identifiers and numbers of three characters or more, and capitalised names.
_VALUE = re.compile(r"\b(?=[\w.\-/:]*\d)[\w][\w.\-/:]{2,}\b|\b[A-Z][a-z]{3,}\b")
NO_USER = "sessions with no user message (nothing to ask)"
SHORT = "sessions of {n} turn(s) or fewer (--longer-than)"


@dataclass
class TraceSession:
    key: str
    calls: list[ChatCall]
    system: str | None = None
    messages: list[Message] = field(default_factory=list)  # after the system prompt
    # The index in ``messages`` each call's input ends at.
    ends: list[int] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "user")

    @property
    def tool_calls(self) -> int:
        return sum(len(m.get("tool_calls") or []) for m in self.messages)


@dataclass
class Built:
    drafts: list[Draft]
    windows: dict[int, list[RecordedWindow]]  # draft index -> its windows
    sessions: int = 0
    turns: int = 0
    tool_calls: int = 0
    recorded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def rebuild(calls: list[ChatCall]) -> list[TraceSession]:
    groups: dict[str, list[ChatCall]] = {}
    for call in sorted(calls, key=lambda c: (c.span.start_ns, c.span.end_ns)):
        if call.messages is not None:
            groups.setdefault(call.session, []).append(call)
    return [_merge(key, group) for key, group in groups.items()]


def _merge(key: str, calls: list[ChatCall]) -> TraceSession:
    session = TraceSession(key, calls)
    merged: list[Message] = []
    last_inputs: list[Message] = []
    for call in calls:
        messages = call.messages or []
        lead = 0
        while lead < len(messages) and messages[lead].get("role") == "system":
            lead += 1
        if lead and session.system is None:
            session.system = "\n\n".join(str(m.get("content") or "") for m in messages[:lead])
        pos = -1
        for message in messages[lead:]:
            pos = _place(merged, message, pos)
        last_inputs.append(merged[pos] if pos >= 0 else {})
        for message in call.output:
            pos = _place(merged, message, pos)
    session.messages = merged
    # Positions are taken at the end: a message placed later may come before.
    session.ends = [_index_of(merged, m) for m in last_inputs]
    return session


def _place(merged: list[Message], message: Message, after: int) -> int:
    """The index of ``message`` in ``merged`` after ``after``, inserting it
    right after ``after`` when no window had it yet."""
    key = _key(message)
    for j in range(after + 1, len(merged)):
        if _key(merged[j]) == key:
            return j
    merged.insert(after + 1, message)
    return after + 1


def _index_of(merged: list[Message], message: Message) -> int:
    return next((i for i, m in enumerate(merged) if m is message), -1)


def _key(message: Message) -> tuple[Any, ...]:
    content = message.get("content")
    text = content if isinstance(content, str) or content is None else json.dumps(content)
    calls = tuple(
        str(c.get("id") or (c.get("function") or {}).get("name"))
        for c in message.get("tool_calls") or []
    )
    return (message.get("role"), (text or "").strip(), calls, message.get("tool_call_id"))


def build_drafts(
    sessions: list[TraceSession], source: str, fmt: str, *, longer_than: int = 0
) -> Built:
    built = Built([], {})
    taken: set[str] = set()
    stem = PurePath(source).stem
    for session in sessions:
        if not any(m.get("role") == "user" for m in session.messages):
            built.skipped[NO_USER] += 1
            continue
        if session.turns <= longer_than:
            built.skipped[SHORT.format(n=longer_than)] += 1
            continue
        where = Where(line=session.calls[0].span.where.line)
        messages = list(session.messages)
        split = split_at_last_user(messages, source, where, "session")
        split.system = session.system
        probe_at = len(split.turns)  # the index of the probe in ``messages``
        scenario_id = _unique(slugify(f"{stem}-{session.key}", fallback="session"), taken)
        numbers = message_numbers(split.turns)
        windows: dict[int, RecordedWindow] = {}
        for call, end in zip(session.calls, session.ends, strict=True):
            if end < 0 or end > probe_at:
                continue  # after the probe: the scenario ends before it
            at = numbers[end] if end < probe_at else (numbers[-1] if numbers else 0) + 1
            turn = sum(1 for m in messages[: end + 1] if m.get("role") == "user")
            windows.setdefault(
                at,
                RecordedWindow(at, call.messages or [], call.tools, turn=turn, span=call.span.ref),
            )
        needles, probes = _evidence(split, messages, probe_at, numbers)
        data = chat_scenario(
            scenario_id,
            split,
            source,
            where,
            fmt,
            description=_described(session),
            tags=["traces"],
            needles=needles,
            probes=probes,
        )
        data["recorded_windows"] = f"{scenario_id}.windows.json"
        built.windows[len(built.drafts)] = list(windows.values())
        built.drafts.append(Draft(where, data))
        built.sessions += 1
        built.turns += session.turns
        built.tool_calls += session.tool_calls
        built.recorded += len(windows)
    if not built.drafts:
        reasons = "; ".join(f"{n} {r}" for r, n in built.skipped.items()) or "no chat spans"
        raise TranscriptError(source, None, f"no session to import ({reasons})")
    return built


def _evidence(
    split: Any, messages: list[Message], probe_at: int, numbers: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A needle for each tool output that a later answer used (repeats one of
    its values), planted back at its own message so fact survival follows
    it; and when production's answer to the last user turn used such values,
    a probe of that turn expecting them, citing those needles."""
    needles: list[dict[str, Any]] = []
    final_values: list[str] = []
    final_needles: list[str] = []
    seen: Counter[str] = Counter()
    # A value the user says is no sign that an answer took it from the output.
    said = " ".join(
        str(m.get("content") or "") for m in messages if m.get("role") == "user"
    ).lower()
    final = _answers(messages[probe_at + 1 :])
    for at, index in enumerate(split.tool_turns):
        name, output = split.tool_outputs[at]
        seen[name] += 1
        values = [v for v in dict.fromkeys(_VALUE.findall(output)) if v.lower() not in said]
        later = _answers(messages[index + 1 : probe_at]) + " " + final
        used = [v for v in values if v in later]
        if not used or not output.strip():
            continue
        turn = split.turns[index]["tool"]
        text, turn["output"] = turn["output"], ""
        needle_id = f"{EVIDENCE_PREFIX}{slugify(name, fallback='tool')}-{seen[name]}"
        needles.append(
            {
                "id": needle_id,
                "text": text,
                "answer": used[0] if len(used) == 1 else used,
                "turn": numbers[index],
            }
        )
        in_final = [v for v in used if v in final and v not in final_values]
        if in_final:
            final_values.extend(in_final)
            final_needles.append(needle_id)
    probes = []
    if final_values:
        probes.append(
            {
                "id": "last-user-evidence",
                "user": split.probe,
                "expect": {"contains": final_values[0]}
                if len(final_values) == 1
                else {"contains_all": final_values},
                "evidence": final_needles,
            }
        )
    return needles, probes


def _answers(messages: list[Message]) -> str:
    return " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "assistant")


def _described(session: TraceSession) -> str:
    """Where the session came from, and what production's calls said of themselves."""
    text = f"Session {session.key} rebuilt from {len(session.calls)} chat span(s)"
    models = sorted({c.model for c in session.calls if c.model})
    if models:
        text += f"; model {', '.join(models)}"
    used = [c.input_tokens for c in session.calls if c.input_tokens is not None]
    if used:
        text += f"; production's calls reported {sum(used):,} input tokens"
    return text


def _unique(base: str, taken: set[str]) -> str:
    scenario_id, n = base, 1
    while scenario_id in taken:
        n += 1
        scenario_id = f"{base}-{n}"
    taken.add(scenario_id)
    return scenario_id
