"""The user side of a rollout: which user turns are sent, in which order.

The scenario's own user messages come first (constraints and needles are
planted in them), then the ``rollout.user`` follow-ups, then each probe's
question, scored against its expectation on that turn (``rollout.probe_turns``
puts a probe at any turn instead; a turn past the end is the last).  Scripted assistant
messages and tool outputs are left out: in a rollout the model writes
those turns itself."""

from __future__ import annotations

from dataclasses import dataclass

from ...llm.text import normalise
from ...messages import content_text
from ...scenario.build import Conversation, ProbeCase
from ...scenario.rollout_spec import RolloutSpec

# The item id of a scenario's rollout: ``scenario::rollout[strategy]``.
ROLLOUT_ID = "rollout"


@dataclass(frozen=True)
class UserTurn:
    text: str
    # A new chat begins with this turn (a multi-session scenario).
    new_chat: bool = False
    # The probe asked as this turn, scored against its expectation.
    probe: ProbeCase | None = None


@dataclass(frozen=True)
class RolloutScript:
    system: str | None
    turns: tuple[UserTurn, ...]
    # Constraint id -> the 1-based turn from which it is in force.
    in_force_from: dict[str, int]


class RolloutCase(ProbeCase):
    """The pytest item of a rollout: one per scenario x strategy."""


def rollout_case(conversation: Conversation) -> RolloutCase:
    last = conversation.probes[-1].question if conversation.probes else ""
    return RolloutCase(ROLLOUT_ID, last, None)


def mode_of(conversation: Conversation, option: str | None) -> str:
    """``--ctx-mode`` wins; then the scenario's ``mode``; replay by default."""
    return option or conversation.scenario.mode or "replay"


def rollout_cases(conversation: Conversation, option: str | None) -> list[ProbeCase] | None:
    """The items of a scenario in rollout mode (one); None in replay mode."""
    return [rollout_case(conversation)] if mode_of(conversation, option) == "rollout" else None


def rollout_spec(conversation: Conversation) -> RolloutSpec:
    return conversation.scenario.rollout or RolloutSpec()


def rollout_script(conversation: Conversation) -> RolloutScript:
    spec = rollout_spec(conversation)
    starts = set(conversation.session_starts)
    turns: list[UserTurn] = []
    chat_begins = False
    for index, message in enumerate(conversation.messages):
        chat_begins = chat_begins or index in starts
        if message["role"] == "user":
            turns.append(UserTurn(content_text(message), new_chat=chat_begins and bool(turns)))
            chat_begins = False
    turns.extend(UserTurn(text) for text in spec.user)
    placed = sorted(
        (spec.probe_turns[p.id], i, p)
        for i, p in enumerate(conversation.probes)
        if p.id in spec.probe_turns
    )
    turns.extend(
        UserTurn(p.question, probe=p) for p in conversation.probes if p.id not in spec.probe_turns
    )
    for turn, _, probe in placed:  # earliest first: each lands at its own turn
        turns.insert(min(turn, len(turns) + 1) - 1, UserTurn(probe.question, probe=probe))
    if len(turns) > spec.max_turns:
        raise ValueError(
            f"the rollout has {len(turns)} user turns, more than its max_turns "
            f"({spec.max_turns}); raise rollout.max_turns or shorten the script"
        )
    return RolloutScript(conversation.scenario.system, tuple(turns), _in_force(conversation, turns))


def _in_force(conversation: Conversation, turns: list[UserTurn]) -> dict[str, int]:
    """The turn each constraint is in force from: when its last part has been said."""
    said = [normalise(t.text) for t in turns]
    system = normalise(conversation.scenario.system or "")
    found: dict[str, int] = {}
    for fact in conversation.facts:
        if fact.kind != "constraint":
            continue
        at = []
        for piece in fact.pieces():
            text = normalise(piece)
            if text in system:
                at.append(1)
                continue
            at.append(next((i + 1 for i, s in enumerate(said) if text in s), 0))
        if at and all(at):
            found[fact.id] = max(at)
    return found
