"""Importers: real transcripts -> scenario YAML (``ctxeval import FORMAT FILE -o DIR``).

An importer takes the file's text and its name (for error messages) and
returns drafts; :func:`write_scenarios` validates and writes them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._common import Draft, TranscriptError, Where, read_text
from .locomo import import_locomo
from .multichallenge import import_multichallenge
from .openai_jsonl import import_openai_jsonl
from .tau_bench import import_tau_bench
from .writer import dump_scenario, render_scenarios, slugify, write_scenarios

Importer = Callable[[str, str], list[Draft]]

IMPORTERS: dict[str, Importer] = {
    "locomo": import_locomo,
    "multichallenge": import_multichallenge,
    "openai-jsonl": import_openai_jsonl,
    "tau-bench": import_tau_bench,
}


class UnknownFormatError(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown format {name!r}; known formats: {', '.join(sorted(IMPORTERS))}")


def import_file(
    fmt: str, path: str | Path, source: str | None = None, *, sessions: str | None = None
) -> list[Draft]:
    """Drafts for every conversation in ``path``; TranscriptError names the place.

    ``sessions`` (locomo only): "split" (the default) imports each session
    as a chat of its own, "join" all of a conversation's sessions as one chat."""
    importer = IMPORTERS.get(fmt)
    if importer is None:
        raise UnknownFormatError(fmt)
    shown = source or str(path)
    if sessions is not None and fmt != "locomo":
        raise TranscriptError(
            shown, None, f"--sessions={sessions} applies to locomo only, not to {fmt}"
        )
    text = read_text(path, shown)
    if sessions is not None:
        return import_locomo(text, shown, sessions=sessions)
    return importer(text, shown)


__all__ = [
    "IMPORTERS",
    "Draft",
    "Importer",
    "TranscriptError",
    "UnknownFormatError",
    "Where",
    "dump_scenario",
    "import_file",
    "render_scenarios",
    "slugify",
    "write_scenarios",
]
