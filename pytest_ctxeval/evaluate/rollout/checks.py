"""Per-turn checks of a rollout: every assistant turn against every
constraint in force (the constraints' own deterministic checks: text,
regexes, imports by syntax tree), the probes asked as turns, where the
strategy's rollout first diverges from the shadow's, and the diff of the
final artifacts.

A constraint's check applies to the turns after it was said (the turn that
says it included).  A check on Python code applies to a turn that wrote
code (a fenced block in the answer, or a file written through a stub); the
other checks apply to every turn.  What a turn is checked on is its answer
followed by the files it wrote."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field

from ...scenario.build import Conversation
from ...scenario.schema import Expectation
from ..scoring import agreement, check_answer
from ..uncheckable import UncheckableAnswer
from .loop import Rollout, TurnRecord
from .script import RolloutScript

# The longest artifact diff a record keeps, in characters.
MAX_DIFF_CHARS = 20_000


@dataclass
class TurnChecks:
    turn: int
    checked: list[str] = field(default_factory=list)
    # Constraint (or ``probe:ID``) -> the checks it failed.
    broken: dict[str, list[str]] = field(default_factory=dict)


def turn_text(record: TurnRecord) -> str:
    parts = [record.answer or ""]
    parts += [f"```python\n{content}\n```" for content in record.written.values()]
    return "\n".join(parts)


def _writes_code(record: TurnRecord) -> bool:
    return bool(record.written) or "```" in (record.answer or "")


def check_rollout(
    conversation: Conversation, script: RolloutScript, rollout: Rollout
) -> list[TurnChecks]:
    checks = {c.id: c.check for c in conversation.scenario.constraints if c.check is not None}
    results = []
    for record in rollout.turns:
        if record.answer is None:
            continue  # the turn that ended the rollout with an error
        found = TurnChecks(record.turn)
        text = turn_text(record)
        for constraint_id, check in sorted(checks.items()):
            start = script.in_force_from.get(constraint_id)
            if start is None or record.turn < start:
                continue
            if check.python is not None and not _writes_code(record):
                continue
            found.checked.append(constraint_id)
            failed = _failures(text, check)
            if failed:
                found.broken[constraint_id] = failed
        probe = script.turns[record.turn - 1].probe
        if probe is not None and (probe.expect or probe.constraint_check):
            name = f"probe:{probe.id}"
            found.checked.append(name)
            failed = [
                f
                for expect in (probe.expect, probe.constraint_check)
                if expect is not None
                for f in _failures(text, expect, probe.question)
            ]
            if failed:
                found.broken[name] = failed
        results.append(found)
    return results


def _failures(text: str, check: Expectation, question: str = "") -> list[str]:
    try:
        return check_answer(text, check, question)
    except UncheckableAnswer as exc:
        return [f"cannot check: {exc}"]


@dataclass(frozen=True)
class ViolationStats:
    checked_turns: int
    violating_turns: int
    first_violation_turn: int | None

    @property
    def rate(self) -> float | None:
        if not self.checked_turns:
            return None
        return round(self.violating_turns / self.checked_turns, 6)


def violation_stats(checks: list[TurnChecks]) -> ViolationStats:
    """Over the turns some constraint was checked on (probes aside)."""
    checked = [c for c in checks if any(not n.startswith("probe:") for n in c.checked)]
    broken = [c for c in checked if any(not n.startswith("probe:") for n in c.broken)]
    first = broken[0].turn if broken else None
    return ViolationStats(len(checked), len(broken), first)


# Decides whether two turns agree: (user turn, strategy's, shadow's) -> agrees.
Judge = Callable[[str, str, str], bool]


def divergence_turn(
    strategy: Rollout,
    shadow: Rollout,
    threshold: float,
    checks: tuple[list[TurnChecks], list[TurnChecks]] = ([], []),
    judge: tuple[RolloutScript, Judge] | None = None,
) -> int | None:
    """The first turn whose answers (and files written) agree less than
    ``threshold`` by token F1 (or that ``judge`` says disagree), or where one
    side broke a check the other kept (two programs that differ in one
    import agree well by words); None when every shared turn agrees."""
    broken = [{c.turn: sorted(c.broken) for c in side} for side in checks]
    for mine, theirs in zip(strategy.turns, shadow.turns, strict=False):
        if mine.answer is None or theirs.answer is None:
            return mine.turn if (mine.answer is None) != (theirs.answer is None) else None
        if broken[0].get(mine.turn, []) != broken[1].get(mine.turn, []):
            return mine.turn
        ours, others = turn_text(mine), turn_text(theirs)
        if judge is not None:
            if ours != others and not judge[1](judge[0].turns[mine.turn - 1].text, ours, others):
                return mine.turn
        elif agreement(ours, others) < threshold:
            return mine.turn
    return None


def turn_agreement(strategy: Rollout, shadow: Rollout) -> dict[int, float]:
    out = {}
    for mine, theirs in zip(strategy.turns, shadow.turns, strict=False):
        if mine.answer is not None and theirs.answer is not None:
            out[mine.turn] = round(agreement(turn_text(mine), turn_text(theirs)), 4)
    return out


def artifact_diff(strategy: Rollout, shadow: Rollout) -> str | None:
    """A unified diff of the final artifacts, shadow (``full``) against the
    strategy: the files written through stubs, or else the last answers.
    None when they are the same."""
    if strategy.files or shadow.files:
        lines: list[str] = []
        for path in sorted(set(strategy.files) | set(shadow.files)):
            lines += difflib.unified_diff(
                shadow.files.get(path, "").splitlines(),
                strategy.files.get(path, "").splitlines(),
                f"full/{path}",
                f"{strategy.strategy}/{path}",
                lineterm="",
            )
    else:
        mine = next((t.answer for t in reversed(strategy.turns) if t.answer), "") or ""
        theirs = next((t.answer for t in reversed(shadow.turns) if t.answer), "") or ""
        lines = list(
            difflib.unified_diff(
                theirs.splitlines(),
                mine.splitlines(),
                "full/last answer",
                f"{strategy.strategy}/last answer",
                lineterm="",
            )
        )
    if not lines:
        return None
    text = "\n".join(lines)
    return text if len(text) <= MAX_DIFF_CHARS else text[:MAX_DIFF_CHARS] + "\n… [diff cut]"
