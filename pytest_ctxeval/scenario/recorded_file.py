"""Reading a scenario's ``recorded_windows`` file: relative to the scenario,
confined like ``!include`` (inside the scenario root, never hidden files),
and held to the same size limits."""

from __future__ import annotations

import json
from pathlib import Path

from ..recorded_windows import RecordedWindow, RecordedWindowsError, parse_windows
from .build import BuildProblem
from .confine import confinement_problem
from .limits import Limits
from .textfile import FileProblem, read_text_file

LOC = ("recorded_windows",)


def read_recorded_windows(
    reference: str, base_dir: Path, root: Path, limits: Limits
) -> dict[int, RecordedWindow]:
    """The windows in ``reference``; a BuildProblem at ``recorded_windows``
    says what is wrong with the file."""
    shown = f"recorded_windows {reference!r}"
    try:
        path = (base_dir / reference).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise BuildProblem(LOC, f"{shown}: not a usable path ({exc})") from None
    problem = confinement_problem(base_dir / reference, path, root)
    if problem:
        raise BuildProblem(LOC, f"{shown} {problem}")
    try:
        text = read_text_file(path, limits)
    except FileProblem as exc:
        raise BuildProblem(LOC, f"{shown}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BuildProblem(
            LOC, f"{shown}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    try:
        return parse_windows(data)
    except RecordedWindowsError as exc:
        raise BuildProblem(LOC, f"{shown}: {exc}") from None
