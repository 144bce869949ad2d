"""``ctxeval validate PATH…``: load every scenario file, report its problems
and warnings as ``file:line:col``, and warn at each probe a decoy passes."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .scenario.build import Conversation


def validate(args: argparse.Namespace) -> int:
    from .scenario.duplicates import ScenarioIds
    from .scenario.errors import ScenarioError, ScenarioWarning
    from .scenario.loader import load_conversations

    files: list[tuple[Path, Path]] = []  # (file, the root its includes must stay in)
    for path in args.paths:
        if path.is_dir():
            # As the plugin collects: folders starting with "_" hold fragments.
            found = (
                p
                for p in path.rglob("*.y*ml")
                if not any(part.startswith("_") for part in p.relative_to(path).parts)
            )
            files.extend((file, args.root or path) for file in sorted(found))
        else:
            files.append((path, include_root(path, args.root)))
    bad = 0
    ids = ScenarioIds()
    for file, root in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ScenarioWarning)
            try:
                scenarios = load_conversations(file, root=root)
            except ScenarioError as exc:
                bad += 1
                print(exc, file=sys.stderr)
                scenarios = None
        notes = _scenario_warnings(caught)
        notes += _decoy_warnings(str(file), scenarios or [], said=notes)
        for scenario in scenarios or []:
            twice = ids.add(scenario.id, str(file))
            if twice:
                notes.append(f"{file}:1:1: warning: {twice}")
        agreement = _agreement_notes(str(file), scenarios or [])
        for note in notes + agreement:
            print(note, file=sys.stderr)
        if scenarios is not None:
            counted = f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}"
            if notes:
                counted += f", {len(notes)} warning{'s' if len(notes) != 1 else ''}"
            if agreement:
                counted += f", {len(agreement)} note{'s' if len(agreement) != 1 else ''}"
            print(f"{file}: ok ({counted})")
    return 1 if bad else 0


def _scenario_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """ScenarioWarnings as "file:line:col: warning: ..."; any other warning
    is shown as Python would have shown it."""
    from .scenario.errors import ScenarioWarning

    notes = []
    for record in caught:
        message = record.message
        if not isinstance(message, ScenarioWarning):
            warnings.showwarning(message, record.category, record.filename, record.lineno)
        elif message.problem is not None:
            p = message.problem
            notes.append(f"{p.path}:{p.line}:{p.column}: warning: {p.message}")
        else:
            notes.append(f"warning: {message}")
    return notes


def _agreement_notes(path: str, conversations: list[Conversation]) -> list[str]:
    """A note at each probe with nothing to check its answer against: it
    passes when it agrees with the full-context answer, whatever that says."""
    notes = []
    for conversation in conversations:
        for probe in conversation.probes:
            if probe.expect is not None or probe.constraint_check is not None:
                continue
            line = conversation.probe_lines.get(probe.id, 1)
            column = conversation.probe_columns.get(probe.id, 1)
            notes.append(
                f"{path}:{line}:{column}: note: probe {probe.id!r} of {conversation.id!r} "
                "has no expect: scored by agreement with the full-context answer"
            )
    return notes


def _decoy_warnings(path: str, conversations: list[Conversation], said: list[str]) -> list[str]:
    """A warning at each probe that a decoy passes: it would be ``uncheckable``.
    A question that gives the answer away was warned of already (``said``)."""
    from .evaluate.calibration import decoy_pass

    notes = []
    for conversation in conversations:
        for probe in conversation.probes:
            found = decoy_pass(conversation, probe)
            if found is None:
                continue
            line = conversation.probe_lines.get(probe.id, 1)
            column = conversation.probe_columns.get(probe.id, 1)
            where = f"{path}:{line}:{column}: warning: "
            if found.decoy.kind == "question" and any(n.startswith(where) for n in said):
                continue
            notes.append(
                f"{where}probe {probe.id!r} of {conversation.id!r} is "
                f"uncheckable: {found.describe()}, though it knows nothing of the session; "
                "expect something only an answer from the session can say"
            )
    return notes


def include_root(file: Path, root: Path | None) -> Path:
    if root is not None:
        return root
    cwd = Path.cwd()
    return cwd if file.resolve().is_relative_to(cwd) else file.parent
