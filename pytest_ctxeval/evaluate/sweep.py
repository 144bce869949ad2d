"""Sweep points (``--ctx-sweep``): each probe asked again at earlier points of
the session, for the forgetting curve.

Turns are the session's user turns, counted from 1.  The probe of a session
of N user turns is turn N+1.  A sweep point asks it as turn ``t`` instead:
the history is every message before the t-th user message, the strategy's
window is the one it would send there (a fork taken during the single
simulation), and the ground truth is that history in full.  A probe about a
needle or constraint, or citing evidence, planted later than the history
reaches is not asked there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..llm.request_text import message_texts
from ..scenario.build import Conversation, Fact, Message, ProbeCase

if TYPE_CHECKING:
    from .simulate import SessionTrace

SWEEP_MARK = "@turn-"
_PLANTED_KEY = "_ctxeval_planted_at"


@dataclass(frozen=True)
class SweepProbe(ProbeCase):
    """A probe asked as turn ``turn``, after ``messages[:cut]``; its id is
    ``<probe>@turn-<turn>``."""

    base_id: str = ""
    turn: int = 0
    cut: int = 0


def user_turn_starts(conversation: Conversation) -> list[int]:
    """The index in ``messages`` of each user turn's message, in order."""
    return [i for i, m in enumerate(conversation.messages) if m.get("role") == "user"]


def sweep_turns(conversation: Conversation, every: int) -> list[int]:
    """The turns a probe is swept at: every ``every``-th user turn after the
    first (turn 1 has no history to forget), up to the last one."""
    turns = len(user_turn_starts(conversation))
    return [t for t in range(every, turns + 1, every) if t >= 2]


def sweep_cuts(conversation: Conversation, every: int | None) -> set[int]:
    """The message indexes the simulation forks the strategy at."""
    if not every:
        return set()
    starts = user_turn_starts(conversation)
    return {starts[t - 1] for t in sweep_turns(conversation, every)}


def sweep_probes(conversation: Conversation, every: int | None) -> list[SweepProbe]:
    """Every probe at every sweep point it can be asked at, probe by probe,
    earliest turn first."""
    if not every:
        return []
    starts = user_turn_starts(conversation)
    planted = _planted_at(conversation)
    found = []
    for probe in conversation.probes:
        # Its needle, its constraint and the evidence it cites must all be said.
        asks_about = [f for f in (probe.needle, probe.constraint, *probe.evidence) if f]
        for turn in sweep_turns(conversation, every):
            cut = starts[turn - 1]
            if all(planted.get(fact, len(conversation.messages)) < cut for fact in asks_about):
                found.append(_at_turn(probe, turn, cut))
    return found


def _at_turn(probe: ProbeCase, turn: int, cut: int) -> SweepProbe:
    fields = {f.name: getattr(probe, f.name) for f in dataclasses.fields(ProbeCase)}
    fields["id"] = f"{probe.id}{SWEEP_MARK}{turn}"
    return SweepProbe(**fields, base_id=probe.id, turn=turn, cut=cut)


def probe_turn(conversation: Conversation, probe: ProbeCase) -> int:
    """The turn the probe is asked as: N+1 for the probe of an N-turn session."""
    if isinstance(probe, SweepProbe):
        return probe.turn
    return len(user_turn_starts(conversation)) + 1


def sweep_turn(probe_id: str) -> int | None:
    """The turn in a sweep point's id (``code@turn-4`` -> 4); None for a plain probe."""
    _, mark, turn = probe_id.rpartition(SWEEP_MARK)
    return int(turn) if mark and turn.isdigit() else None


def history(conversation: Conversation, probe: ProbeCase) -> list[Message]:
    """The messages before the probe: the whole session, or a sweep point's part of it."""
    if isinstance(probe, SweepProbe):
        return conversation.messages[: probe.cut]
    return conversation.messages


def planted_facts(conversation: Conversation, probe: ProbeCase) -> list[Fact]:
    """The facts already planted when the probe is asked: at a sweep point, a
    fact planted later cannot have survived or been lost."""
    if not isinstance(probe, SweepProbe):
        return conversation.facts
    planted = _planted_at(conversation)
    return [f for f in conversation.facts if planted.get(f.id, probe.cut) < probe.cut]


def _planted_at(conversation: Conversation) -> dict[str, int]:
    """Per fact id, the index of the message that completes it (a constraint
    in parts is planted once its last part is); a fact found nowhere is left out.
    Found once per conversation, kept on it."""
    cached: dict[str, int] | None = conversation.__dict__.get(_PLANTED_KEY)
    if cached is not None:
        return cached
    texts = ["\n".join(message_texts(m)) for m in conversation.messages]
    found: dict[str, int] = {}
    for fact in conversation.facts:
        indexes = [next((i for i, t in enumerate(texts) if p in t), None) for p in fact.pieces()]
        if all(i is not None for i in indexes):
            found[fact.id] = max(i for i in indexes if i is not None)
    conversation.__dict__[_PLANTED_KEY] = found
    return found


def trace_at(session: SessionTrace, probe: ProbeCase) -> SessionTrace:
    """The simulation as the probe sees it: the whole session, or the fork taken
    at the probe's sweep point; the strategy's own calls count into that one."""
    trace = session.forks[probe.cut] if isinstance(probe, SweepProbe) else session
    return trace.counting_into()
