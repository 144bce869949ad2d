"""Turn a validated Scenario into the concrete session the harness replays:
OpenAI-style messages with needles and constraints planted, and the probes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from ..llm.request_text import message_texts
from ..llm.text import contains_phrase, normalise, normalise_joined
from ..recorded_windows import RecordedWindow
from .generators import GenerateSpec, generate_text, generate_turns
from .schema import (
    AssistantTurn,
    Expectation,
    GenerateTurn,
    Needle,
    Scenario,
    ToolTurn,
    UserTurn,
)

Message = dict[str, Any]


class BuildProblem(ValueError):
    """A scenario that validates but cannot be built; ``loc`` points into the YAML."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass(frozen=True)
class Fact:
    """Something the model must still know at the probe: a needle or a constraint."""

    id: str
    kind: Literal["needle", "constraint"]
    text: str
    answers: tuple[str, ...] = ()
    # A constraint stated in parts: each must still be there for it to hold.
    parts: tuple[str, ...] = ()
    # The words naming the fact's value and that value (the fact ledger's ``mutated``).
    slot: str | None = None
    value: str | None = None

    def pieces(self) -> tuple[str, ...]:
        return self.parts or (self.text,)


@dataclass(frozen=True)
class ProbeCase:
    id: str
    question: str
    expect: Expectation | None
    needle: str | None = None
    constraint: str | None = None
    # The named constraint's own check, applied on top of ``expect``.
    constraint_check: Expectation | None = None
    # The needles holding the evidence for the answer (imported datasets cite it).
    evidence: tuple[str, ...] = ()


@dataclass
class Conversation:
    scenario: Scenario
    messages: list[Message]  # system first (if any), then the session
    probes: list[ProbeCase]
    facts: list[Fact] = field(default_factory=list)
    # probe id -> 1-based line of its YAML entry (set by the loader)
    probe_lines: dict[str, int] = field(default_factory=dict)
    # probe id -> 1-based column of its YAML entry (set by the loader)
    probe_columns: dict[str, int] = field(default_factory=dict)
    # Indexes into ``messages`` where a new chat begins (multi-session).
    session_starts: list[int] = field(default_factory=list)
    # The matrix values this scenario was expanded with (empty without a matrix).
    matrix: dict[str, Any] = field(default_factory=dict)
    # The windows production sent, by message number (``recorded_windows``,
    # set by the loader); None for a scenario that names no such file.
    recorded_windows: dict[int, RecordedWindow] | None = None

    @property
    def id(self) -> str:
        return self.scenario.id

    @cached_property
    def coincidental_answers(self) -> dict[str, frozenset[str]]:
        """Per fact id, the answers the session mentions even with the fact's
        own text taken out (``15`` in log timestamps, a value that other text
        states too).  Such a mention in a window is no evidence that the fact
        survived; fact survival checks against this.  Computed once per
        conversation, on first use."""
        session = normalise_joined(t for m in self.messages for t in message_texts(m))
        found: dict[str, frozenset[str]] = {}
        for fact in self.facts:
            if not fact.answers:
                continue
            without = session
            for piece in fact.pieces():
                without = without.replace(normalise(piece), " ")
            found[fact.id] = frozenset(a for a in fact.answers if contains_phrase(without, a))
        return found


def build_conversation(scenario: Scenario) -> Conversation:
    chats = [s.turns for s in scenario.sessions] if scenario.sessions else [scenario.turns]
    session: list[Message] = []
    starts: list[int] = []
    call_ids = itertools.count(1)  # one numbering for all chats: ids stay unique
    for turns in chats:
        starts.append(len(session))
        session.extend(_expand_turns(turns, call_ids))
    for i, constraint in enumerate(scenario.constraints):
        for j, part in enumerate(constraint.pieces()):
            loc = (
                ("constraints", i, "parts", j, "at_turn")
                if constraint.parts
                else ("constraints", i, "at_turn")
            )
            _plant_constraint(session, part.text, part.at_turn, loc)
    for i, needle in enumerate(scenario.needles):
        _plant_needle(session, needle, i)
    system = [{"role": "system", "content": scenario.system}] if scenario.system else []
    return Conversation(
        scenario=scenario,
        messages=system + session,
        probes=[_probe_case(scenario, p) for p in scenario.probes],
        facts=_facts(scenario),
        session_starts=[len(system) + start for start in starts[1:]],
    )


def _expand_turns(turns: list[Any], call_ids: Iterator[int]) -> list[Message]:
    messages: list[Message] = []
    pending: list[dict[str, Any]] = []  # tool calls still waiting for a result

    def next_id() -> str:
        return f"call_{next(call_ids)}"

    for index, turn in enumerate(turns):
        if isinstance(turn, UserTurn):
            messages.append({"role": "user", "content": turn.user})
        elif isinstance(turn, AssistantTurn):
            message: Message = {"role": "assistant", "content": turn.assistant}
            if turn.tool_calls:
                calls = [_tool_call(c.id or next_id(), c.name, c.args) for c in turn.tool_calls]
                message["tool_calls"] = calls
                pending = list(calls)
            messages.append(message)
        elif isinstance(turn, ToolTurn):
            spec = turn.tool
            output = spec.output if spec.output is not None else generate_text(spec.generate)  # type: ignore[arg-type]
            call = next((c for c in pending if c["function"]["name"] == spec.name), None)
            if call is None:
                # A bare tool output: synthesise the assistant call it answers.
                call = _tool_call(next_id(), spec.name, spec.args)
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            else:
                pending.remove(call)
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": spec.name, "content": output}
            )
        elif isinstance(turn, GenerateTurn):
            messages.extend(generate_turns(turn.generate))
        else:  # pragma: no cover - the schema admits nothing else
            raise BuildProblem(("turns", index), f"unsupported turn {turn!r}")
    return messages


def generated_specs(scenario: Scenario) -> Iterator[tuple[tuple[str | int, ...], GenerateSpec]]:
    """Every ``generate`` of the scenario, with where it is in the YAML."""
    if scenario.sessions:
        chats: list[tuple[tuple[str | int, ...], list[Any]]] = [
            (("sessions", i, "turns"), s.turns) for i, s in enumerate(scenario.sessions)
        ]
    else:
        chats = [(("turns",), scenario.turns)]
    for prefix, turns in chats:
        for index, turn in enumerate(turns):
            if isinstance(turn, GenerateTurn):
                yield (*prefix, index, "generate"), turn.generate
            elif isinstance(turn, ToolTurn) and turn.tool.generate is not None:
                yield (*prefix, index, "tool", "generate"), turn.tool.generate


def _tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(args, sort_keys=True)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _plant_constraint(
    session: list[Message], text: str, at_turn: int, loc: tuple[str | int, ...]
) -> None:
    """Constraints are said by the user: joined to the user message at or
    before ``at_turn`` (1-based), or the first one after it."""
    if at_turn > max(len(session), 1):
        raise BuildProblem(loc, f"at_turn {at_turn} is past the session's {len(session)} messages")
    users = [i for i, m in enumerate(session) if m["role"] == "user"]
    if not users:
        session.insert(0, {"role": "user", "content": text})
        return
    before = [i for i in users if i <= at_turn - 1]
    target = before[-1] if before else users[0]
    session[target]["content"] = f"{session[target]['content']}\n{text}"


def _plant_needle(session: list[Message], needle: Needle, number: int) -> None:
    if not session:
        raise BuildProblem(("needles", number), "cannot plant a needle in an empty session")
    if needle.turn is not None:
        if needle.turn > len(session):
            raise BuildProblem(
                ("needles", number, "turn"),
                f"turn {needle.turn} is past the session's {len(session)} messages",
            )
        message = session[needle.turn - 1]
        text = message.get("content") or ""
        message["content"] = _insert_text(text, len(text) // 2, needle.text)
        return
    index, fraction = _at_depth(session, needle.depth or 0.0)
    if needle.role is not None and session[index]["role"] != needle.role:
        candidates = [i for i, m in enumerate(session) if m["role"] == needle.role]
        if not candidates:
            raise BuildProblem(
                ("needles", number, "role"), f"the session has no {needle.role} message to plant in"
            )
        index, fraction = min(candidates, key=lambda i: abs(i - index)), 0.5
    message = session[index]
    text = message.get("content") or ""
    message["content"] = _insert_text(text, round(fraction * len(text)), needle.text)


def _at_depth(session: list[Message], depth: float) -> tuple[int, float]:
    """The message at ``depth`` of the session's tokens, and how far into it."""
    from ..llm.tokens import count_text_tokens  # lazy: litellm's tokenizer

    sizes = [count_text_tokens(m.get("content") or "") for m in session]
    target = depth * sum(sizes)
    start = 0
    for index, size in enumerate(sizes):
        if target <= start + size or index == len(session) - 1:
            return index, ((target - start) / size if size else 0.0)
        start += size
    return len(session) - 1, 1.0  # pragma: no cover - the loop always returns


def _insert_text(text: str, at: int, needle: str) -> str:
    """Insert at the line or sentence boundary nearest ``at``."""
    if not text:
        return needle
    at = max(0, min(at, len(text)))
    if at == 0:
        return f"{needle}\n{text}" if "\n" in text else f"{needle} {text}"
    if at == len(text):
        return f"{text}\n{needle}" if "\n" in text else f"{text} {needle}"
    for sep in ("\n", ". ", " "):
        cut = _nearest_cut(text, sep, at)
        if cut is not None:
            glue = "\n" if sep == "\n" else " "
            return f"{text[:cut]}{needle}{glue}{text[cut:]}"
    return f"{text} {needle}"


def _nearest_cut(text: str, sep: str, at: int) -> int | None:
    """The end of the occurrence of ``sep`` nearest ``at`` (the earlier one
    on a tie), found by searching outwards from ``at``: a needle planted in
    a long tool output costs the distance to a boundary, not the output's length."""
    before = text.rfind(sep, 0, at)  # the last occurrence ending at or before ``at``
    after = text.find(sep, max(at - len(sep) + 1, 0))  # the first ending after it
    cuts = [i + len(sep) for i in (before, after) if i != -1]
    return min(cuts, key=lambda c: abs(c - at)) if cuts else None


def _probe_case(scenario: Scenario, probe: Any) -> ProbeCase:
    needle = next((n for n in scenario.needles if n.id == probe.needle), None)
    question: str = probe.user or (needle.question if needle and needle.question else "")
    expect = probe.expect
    if expect is None and needle is not None and needle.answer is not None:
        answers = [needle.answer] if isinstance(needle.answer, str) else list(needle.answer)
        expect = Expectation(contains_any=answers)
    constraint = next((c for c in scenario.constraints if c.id == probe.constraint), None)
    check = constraint.check if constraint is not None else None
    evidence = tuple(probe.evidence or ())
    return ProbeCase(probe.id, question, expect, probe.needle, probe.constraint, check, evidence)


def _facts(scenario: Scenario) -> list[Fact]:
    facts = []
    for n in scenario.needles:
        answers = (
            ()
            if n.answer is None
            else ((n.answer,) if isinstance(n.answer, str) else tuple(n.answer))
        )
        value = n.value or (answers[0] if answers else None)
        facts.append(Fact(n.id, "needle", n.text, answers, slot=n.slot, value=value))
    for c in scenario.constraints:
        parts = tuple(p.text for p in c.parts) if c.parts else ()
        facts.append(Fact(c.id, "constraint", c.text or " ".join(parts), parts=parts))
    return facts
