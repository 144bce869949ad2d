"""The terminal lines of a run with rollouts: per strategy, the share of
checked turns on which the model broke a constraint in force, the first
such turn, and the full-context shadow's rate on the same user turns."""

from __future__ import annotations

from typing import Any

from ..results.record import ResultRecord
from .terminal_text import printable


def rollout_lines(records: list[ResultRecord]) -> list[str]:
    rollouts = [r for r in records if _get(r, "mode") == "rollout"]
    if not rollouts:
        return []
    totals: dict[str, list[int]] = {}
    first: dict[str, tuple[int, str]] = {}
    for record in sorted(rollouts, key=lambda r: (r.strategy, r.scenario)):
        checked = int(_get(record, "checked_turns") or 0)
        broken = int(_get(record, "violating_turns") or 0)
        mine = totals.setdefault(record.strategy, [0, 0, 0, 0])
        mine[0] += broken
        mine[1] += checked
        mine[2] += int(_get(record, "shadow_violating_turns") or 0)
        mine[3] += int(_get(record, "shadow_checked_turns") or 0)
        turn = _get(record, "first_violation_turn")
        if isinstance(turn, int) and (
            record.strategy not in first or turn < first[record.strategy][0]
        ):
            first[record.strategy] = (turn, record.scenario)
    width = max(len(name) for name in totals)
    lines = ["rollouts: constraint violations over the checked turns (the full shadow beside)"]
    for name, (broken, checked, shadow_broken, shadow_checked) in sorted(totals.items()):
        rate = f"{broken / checked:.0%}" if checked else "-"
        shadow = f"{shadow_broken / shadow_checked:.0%}" if shadow_checked else "-"
        where = first.get(name)
        at = f", first at turn {where[0]} of {where[1]}" if where else ""
        lines.append(
            printable(
                f"{name:<{width}}  violation rate {rate:>4} ({broken}/{checked} turns){at}"
                f"  shadow {shadow}"
            )
        )
    return lines


def _get(record: ResultRecord, name: str) -> Any:
    return getattr(record, name, None)
