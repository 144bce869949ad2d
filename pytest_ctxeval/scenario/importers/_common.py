"""What every importer shares: the error type, drafts, reading JSON and JSONL
with positions, and turning odd message content into plain text."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Needles planted from what a dataset cites as an answer's evidence are named
# evidence-…, so a reader of the scenario tells them from hand-planted ones.
EVIDENCE_PREFIX = "evidence-"


@dataclass(frozen=True)
class Where:
    """A place in a transcript file: a 1-based line (JSONL) or a 0-based item
    of the top-level JSON list (so ``jq '.[N]'`` shows it)."""

    line: int | None = None
    item: int | None = None

    def __str__(self) -> str:
        return str(self.line) if self.line is not None else f"item {self.item}"

    def describe(self) -> str:
        return f"line {self.line}" if self.line is not None else f"item {self.item}"


class TranscriptError(Exception):
    """A transcript that cannot be imported; names the file and the place."""

    def __init__(self, source: str, where: Where | None, message: str) -> None:
        self.source = source
        self.where = where
        self.message = message
        super().__init__(f"{source}:{where}: {message}" if where else f"{source}: {message}")


@dataclass(frozen=True)
class Draft:
    """One scenario as plain data; the writer slugifies ``data['id']``,
    validates it against the schema and serialises it."""

    where: Where
    data: dict[str, Any]
    # Probe candidates: how many the importer kept, and per reason how many
    # it dropped (``ctxeval import`` prints them); None when it drops none.
    kept: int | None = None
    dropped: dict[str, int] = field(default_factory=dict)


def candidate_summary(drafts: Iterable[Draft]) -> str | None:
    """ "probes: 7 of 12 candidates kept; dropped: 3 with …, 2 …", or None
    when no importer counted its candidates."""
    kept, dropped, counted = 0, Counter[str](), False
    for draft in drafts:
        if draft.kept is None:
            continue
        counted = True
        kept += draft.kept
        dropped.update(draft.dropped)
    if not counted:
        return None
    total = kept + sum(dropped.values())
    text = f"probes: {kept} of {total} candidate{'s' if total != 1 else ''} kept"
    if dropped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in dropped.most_common())
        text += f"; dropped: {reasons}"
    return text


def read_text(path: str | Path, source: str) -> str:
    try:
        # utf-8-sig: exports from Windows tools often start with a BOM.
        text = Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TranscriptError(source, None, "file not found") from None
    except IsADirectoryError:
        raise TranscriptError(source, None, "is a directory, expected a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(source, None, f"cannot read file: {exc}") from None
    if not text.strip():
        raise TranscriptError(source, None, "file is empty: expected at least one conversation")
    return text


def jsonl_records(text: str, source: str) -> list[tuple[Where, Any]]:
    """Each non-blank line parsed as JSON, with its 1-based line number."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((Where(line=number), json.loads(line)))
        except json.JSONDecodeError as exc:
            hint = " (is this one JSON document rather than JSON Lines?)" if number == 1 else ""
            raise TranscriptError(
                source, Where(line=number), f"invalid JSON: {exc.msg} at column {exc.colno}{hint}"
            ) from None
    return records


def json_items(text: str, source: str) -> list[tuple[Where, Any]]:
    """A JSON list of items, or one object taken as a list of one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            source, Where(line=exc.lineno), f"invalid JSON: {exc.msg} at column {exc.colno}"
        ) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise TranscriptError(
            source, None, f"expected a JSON list of objects, got {type_name(data)}"
        )
    if not data:
        raise TranscriptError(source, None, "the list is empty: expected at least one item")
    return [(Where(item=i), item) for i, item in enumerate(data)]


def require_object(
    value: Any, source: str, where: Where, what: str = "an object"
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TranscriptError(source, where, f"expected {what}, got {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), type(value).__name__)


def clean_text(text: str) -> str:
    # CR line ends would force double-quoted YAML; they carry no meaning here.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def content_text(value: Any) -> str:
    """Message content as text: null -> "", a list of parts -> their text
    joined by newlines (images as a marker), anything else -> JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return "\n".join(part for part in map(_part_text, value) if part)
    if isinstance(value, dict):
        return _part_text(value)
    return json.dumps(value, ensure_ascii=False)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return clean_text(part)
    if isinstance(part, dict):
        text = part.get("text")
        if isinstance(text, str):
            return clean_text(text)
        if isinstance(text, dict) and isinstance(text.get("value"), str):  # Assistants API shape
            return clean_text(text["value"])
        kind = str(part.get("type", ""))
        if "image" in kind:
            return "[image]"
        if "audio" in kind:
            return "[audio]"
    if part is None:
        return ""
    return json.dumps(part, ensure_ascii=False, sort_keys=True)
