"""What a rollout item's drill-down shows: the turn-by-turn timeline (the
constraints checked on each turn, those broken under the strategy and under
the full shadow, how far the two agree), the turn the rollouts diverged at,
the artifact diff, and the fact ledger as facts x requests with the
compactions marked ("lost at request 31, compaction #3")."""

from __future__ import annotations

from typing import Any

from ..results.record import ResultRecord

# The ledger's states, in the order a fact degrades; the report colours them.
LEDGER_STATES = ("verbatim", "transformed", "mutated", "in_store", "gone")


def rollout_view(record: ResultRecord) -> dict[str, Any] | None:
    if getattr(record, "mode", None) != "rollout":
        return None

    def get(name: str) -> Any:
        return getattr(record, name, None)

    compactions = [int(c) for c in get("compaction_requests") or []]
    ledger = get("fact_ledger") or {}
    return {
        "turns": get("rollout_turns"),
        "violation_rate": get("violation_rate"),
        "shadow_violation_rate": get("shadow_violation_rate"),
        "first_violation_turn": get("first_violation_turn"),
        "divergence_turn": get("divergence_turn"),
        "timeline": get("rollout_timeline") or [],
        "artifact_diff": get("artifact_diff"),
        "compactions": compactions,
        "ledger": {
            fact: {"runs": runs, "events": ledger_events(runs, compactions)}
            for fact, runs in sorted(ledger.items())
        },
    }


def ledger_events(runs: list[list[Any]], compactions: list[int]) -> list[str]:
    """Each change of a fact's state after the first request, in words."""
    events = []
    at = 1
    previous = None
    for state, count in runs:
        if previous is not None and state != previous:
            verb = {"gone": "lost", "mutated": "mutated"}.get(str(state), f"now {state}")
            where = f"{verb} at request {at}"
            if at in compactions:
                where += f", compaction #{compactions.index(at) + 1}"
            events.append(where)
        previous = state
        at += int(count)
    return events
