"""Whether two runs' result records say the same, ignoring what differs between
any two runs (run ids, times, the commit, durations):

    python benchmarks/same_results.py BEFORE.jsonl AFTER.jsonl

For a change meant to be behaviour-neutral (a speed-up): run the same suite
before and after it with the same options, and compare. Prints how many records
were compared and every field that differs; exits 1 if any does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# Fields that differ between any two runs of the same code.
IGNORED = frozenset(
    {"run_id", "started_at", "finished_at", "timestamp", "commit", "git_commit", "duration_s"}
)
IGNORED_SUFFIXES = ("_s", "_ms", "_at", "_seconds")


def _ignored(key: str) -> bool:
    return key in IGNORED or key.endswith(IGNORED_SUFFIXES)


def scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not _ignored(k)}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _key(record: dict[str, Any]) -> str:
    return str(record.get("item") or record.get("nodeid") or json.dumps(scrub(record)))


def records(path: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[_key(record)] = scrub(record)
    return out


def differences(before: dict[str, Any], after: dict[str, Any], where: str = "") -> list[str]:
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(differences(a, b, f"{where}{key}."))
        elif a != b:
            out.append(f"{where}{key}: {str(a)[:80]!r} -> {str(b)[:80]!r}")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = records(Path(argv[0])), records(Path(argv[1]))
    problems = [f"only in {argv[0]}: {k}" for k in sorted(set(before) - set(after))]
    problems += [f"only in {argv[1]}: {k}" for k in sorted(set(after) - set(before))]
    for key in sorted(set(before) & set(after)):
        problems += [f"{key}: {d}" for d in differences(before[key], after[key])]
    for problem in problems:
        print(problem)
    print(f"{len(set(before) & set(after))} records compared, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
