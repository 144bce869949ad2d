"""``tau-bench``: tau-bench trajectories (task_id, reward, info, traj, trial).

The trajectory is kept up to its last user message, which becomes a probe
scored against the full-context answer. Tool results are where agents lose
facts, so up to three values from earlier tool outputs become probes with
a known answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from ._common import Draft, TranscriptError, Where, json_items, require_object
from ._messages import Session, chat_scenario, split_at_last_user

FORMAT = "tau-bench"
MAX_VALUE_PROBES = 3
# Values shorter than this match by accident ("1" is in every answer);
# longer ones are not facts a model would repeat verbatim.
MIN_LEN, MAX_LEN = 3, 100
_BOOLEAN_WORDS = {"true", "false", "yes", "no", "none", "null"}


def import_tau_bench(text: str, source: str) -> list[Draft]:
    stem = PurePath(source).stem
    drafts = []
    for where, value in json_items(text, source):
        item = require_object(value, source, where, "a trajectory object")
        if "traj" not in item:
            raise TranscriptError(source, where, "missing 'traj'")
        session = split_at_last_user(item["traj"], source, where, "traj")
        drafts.append(Draft(where, _scenario(item, session, stem, source, where)))
    return drafts


def _scenario(
    item: dict[str, Any], session: Session, stem: str, source: str, where: Where
) -> dict[str, Any]:
    task, trial, reward = item.get("task_id"), item.get("trial"), item.get("reward")
    if task in (None, ""):
        scenario_id = f"{stem}-{where.item}"
    else:
        scenario_id = f"tau-bench-task-{task}" + (
            f"-trial-{trial}" if trial not in (None, "") else ""
        )
    facts = ", ".join(
        f"{label} {value}"
        for label, value in (("task", task), ("trial", trial), ("reward", reward))
        if value is not None
    )
    probes = [
        {
            "id": f"tool-value-{n}",
            "user": f"What was the {path} in the result of {tool}?",
            "expect": {"contains": value},
        }
        for n, (tool, path, value) in enumerate(pick_values(session.tool_outputs), 1)
    ]
    description = f"tau-bench trajectory ({facts})" if facts else "tau-bench trajectory"
    return chat_scenario(
        scenario_id, session, source, where, FORMAT, description=description, probes=probes
    )


def pick_values(
    outputs: list[tuple[str, str]], limit: int = MAX_VALUE_PROBES
) -> list[tuple[str, str, str]]:
    """(tool, key path, value) for the first distinct scalar leaves of the
    tool outputs, in traversal order: deterministic, and early outputs are
    the ones a strategy is most likely to have dropped."""
    picked: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for tool, output in outputs:
        try:
            data = json.loads(output)
        except (json.JSONDecodeError, TypeError):
            continue  # plain-text results have no key path to ask about
        for path, value in _leaves(data, ""):
            if path and _usable(value) and value not in seen:
                seen.add(value)
                picked.append((tool, path, value))
                if len(picked) == limit:
                    return picked
    return picked


def _leaves(data: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, f"{path}[{i}]")
    elif isinstance(data, (str, int, float)) and not isinstance(data, bool):
        yield path, str(data)


def _usable(value: str) -> bool:
    return (
        MIN_LEN <= len(value.strip()) <= MAX_LEN
        and "\n" not in value
        and value.strip().lower() not in _BOOLEAN_WORDS
    )
