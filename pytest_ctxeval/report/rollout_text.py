"""What a failed rollout item adds to its failure report in the terminal.
Light on imports: the item's failure report is built without pandas or pydantic."""

from __future__ import annotations

from typing import Any


def rollout_failure_lines(record: Any) -> list[str]:
    """What a failed rollout item adds to its failure report."""
    if _get(record, "mode") != "rollout":
        return []
    rate, shadow = _get(record, "violation_rate"), _get(record, "shadow_violation_rate")
    shown = f"{rate:.0%}" if isinstance(rate, (int, float)) else "-"
    theirs = f"{shadow:.0%}" if isinstance(shadow, (int, float)) else "-"
    first = _get(record, "first_violation_turn")
    diverged = _get(record, "divergence_turn")
    line = (
        f"rollout:             {_get(record, 'rollout_turns')} turns, violation rate {shown} "
        f"({_get(record, 'violating_turns')}/{_get(record, 'checked_turns')} turns)"
        + (f", first at turn {first}" if first else "")
        + f"; full shadow {theirs}"
        + (f"; diverged at turn {diverged}" if diverged else "")
    )
    files = _get(record, "artifact_files") or []
    lines = [line]
    if _get(record, "artifact_diff"):
        written = f" ({', '.join(files[:5])}{' …' if len(files) > 5 else ''})" if files else ""
        lines.append(f"artifact:            differs from the shadow's{written}")
    return lines


def _get(record: Any, name: str) -> Any:
    return getattr(record, name, None)
