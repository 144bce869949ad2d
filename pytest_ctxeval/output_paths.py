"""Checks on where a run writes, made before its first model call.

Found only when the run ends, an unwritable results file or report costs every
model call the run made; here each problem is one line naming the option and
the path.  Only the file system is asked (no file is created), so a check costs
a few ``stat`` calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class OutputPath:
    option: str  # e.g. "--ctx-results"
    path: Path  # absolute
    kind: Literal["file", "directory"]


def output_problems(outputs: list[OutputPath]) -> list[str]:
    """One line per problem: the option, the path and what is wrong with it."""
    problems: list[str] = []
    first_user: dict[Path, str] = {}
    for output in outputs:
        other = first_user.setdefault(output.path, output.option)
        if other != output.option:
            problems.append(
                f"{output.option}: {output.path} is also where {other} writes; "
                "expected a path of its own"
            )
            continue
        problem = _unwritable(output)
        if problem:
            problems.append(f"{output.option}: cannot write {output.path}: {problem}")
    return problems


def _unwritable(output: OutputPath) -> str | None:
    path = output.path
    if path.exists():
        if output.kind == "file" and path.is_dir():
            return "it is a directory; expected a file path"
        if output.kind == "directory" and not path.is_dir():
            return "it is a file; expected a directory"
        access = os.W_OK | os.X_OK if path.is_dir() else os.W_OK
        return None if os.access(path, access) else "it is not writable"
    # Missing directories are created: the nearest existing one must allow that.
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a directory"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"directory {parent} is not writable"
            return None
    return None
