"""Deterministic pruning of one tool output, by what it looks like.

- JSON: every array longer than ``items`` keeps its first items plus a count
  and the key schema of its elements; the result is still valid JSON.
- A file read (numbered lines, as ``cat -n`` or an agent's Read tool prints
  them): the first and last lines, with the number of lines pruned.
- A log: 5 lines before and 15 after every error marker; without one, its
  head and tail.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

ERROR_MARKER = re.compile(
    r"\b(ERROR|FATAL|CRITICAL|FAILED|FAILURE|Traceback|Exception|panic)\b|\b\w+(Error|Exception):"
)
_NUMBERED = re.compile(r"^\s*(\d+)(?:\t|→|:|\|| {2})")
PRUNED_LINES = "[… {n} lines pruned …]"


@dataclass(frozen=True)
class PruneRules:
    json_items: int = 2
    log_before: int = 5
    log_after: int = 15
    log_head: int = 10
    log_tail: int = 20
    file_head: int = 20
    file_tail: int = 20


def prune(text: str, rules: PruneRules) -> str:
    """The pruned text; ``text`` itself when nothing needed cutting."""
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            pruned = prune_json(value, rules.json_items)
            return text if pruned == value else json.dumps(pruned, sort_keys=True)
    lines = text.splitlines()
    if is_numbered_file(lines):
        keep = _head(lines, rules.file_head) | _tail(lines, rules.file_tail)
    else:
        keep = _log_lines_to_keep(lines, rules)
    return keep_lines(lines, keep) if len(keep) < len(lines) else text


def _log_lines_to_keep(lines: list[str], rules: PruneRules) -> set[int]:
    errors = [i for i, line in enumerate(lines) if ERROR_MARKER.search(line)]
    if not errors:
        return _head(lines, rules.log_head) | _tail(lines, rules.log_tail)
    return {
        j
        for i in errors
        for j in range(i - rules.log_before, i + rules.log_after + 1)
        if 0 <= j < len(lines)
    }


def prune_json(value: Any, items: int) -> Any:
    """Arrays cut to their first ``items`` elements, a count and a schema, at any depth."""
    if isinstance(value, dict):
        return {key: prune_json(sub, items) for key, sub in value.items()}
    if not isinstance(value, list):
        return value
    if len(value) <= items:
        return [prune_json(sub, items) for sub in value]
    return {
        "first_items": [prune_json(sub, items) for sub in value[:items]],
        "total_items": len(value),
        "pruned_items": len(value) - items,
        "item_schema": item_schema(value),
    }


def item_schema(values: list[Any]) -> dict[str, str] | str:
    """Key -> JSON type over all elements (``a|b`` where they differ); a bare type
    for arrays of scalars."""
    if all(isinstance(v, dict) for v in values):
        types: dict[str, set[str]] = {}
        for value in values:
            for key, sub in value.items():
                types.setdefault(key, set()).add(json_type(sub))
        return {key: "|".join(sorted(found)) for key, found in sorted(types.items())}
    return "|".join(sorted({json_type(v) for v in values}))


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def is_numbered_file(lines: list[str]) -> bool:
    """Most lines start with consecutive line numbers."""
    if len(lines) < 3:
        return False
    numbers = [m.group(1) for m in map(_NUMBERED.match, lines) if m]
    if len(numbers) < 0.8 * len(lines):
        return False
    ints = [int(n) for n in numbers]
    steps = sum(1 for a, b in zip(ints, ints[1:], strict=False) if b == a + 1)
    return steps >= 0.8 * (len(ints) - 1)


def keep_lines(lines: list[str], keep: set[int]) -> str:
    """The kept lines in order; every gap becomes one line saying how many were pruned."""
    out: list[str] = []
    gap = 0
    for i, line in enumerate(lines):
        if i in keep:
            if gap:
                out.append(PRUNED_LINES.format(n=gap))
                gap = 0
            out.append(line)
        else:
            gap += 1
    if gap:
        out.append(PRUNED_LINES.format(n=gap))
    return "\n".join(out)


def _head(lines: list[str], n: int) -> set[int]:
    return set(range(min(n, len(lines))))


def _tail(lines: list[str], n: int) -> set[int]:
    return set(range(max(len(lines) - n, 0), len(lines)))
