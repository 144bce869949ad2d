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


def output_problems(outputs: list[OutputPath], root: Path | None = None) -> list[str]:
    """One line per problem: the option, the path and what is wrong with it.
    A symbolic link at the path, or at a folder on the way to it inside the
    project ``root``, is refused: a pull request can commit one pointing at
    ``~/.bashrc``."""
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
        problem = _link_problem(output.path, root) or _unwritable(output)
        if problem:
            problems.append(f"{output.option}: cannot write {output.path}: {problem}")
    return problems


def _link_problem(path: Path, root: Path | None) -> str | None:
    """The highest symbolic link among ``path`` and its folders inside
    ``root`` (the path itself wherever it is), described; None if none."""
    inside = [p for p in reversed(path.parents) if root is not None and p.is_relative_to(root)]
    for candidate in (*inside[1:], path):  # the root itself is the project, not our business
        if candidate.is_symlink():
            try:
                target = os.readlink(candidate)
            except OSError:
                target = "?"
            return (
                f"{candidate} is a symbolic link (to {target}); outputs are never written "
                "through a link: remove it, or choose a path without one"
            )
    return None


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
