"""Where ``headtail`` puts the middles it cuts out: an in-memory SQLite table.

Each entry keeps the stored middle (what ``retrieve_memory`` returns), the whole
original message (for fact survival: ``in_store``) and a preview that the
``retrieve_memory`` tool lists so the model can tell which memory to fetch.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    preview TEXT NOT NULL,
    text TEXT NOT NULL,
    original TEXT NOT NULL
)
"""
_COLUMNS = "id, position, message_count, preview, text, original"

PREVIEW_HEAD = 100
NOTABLE_LINES = 2
NOTABLE_LINE_CHARS = 120
# Letters only (no digits or underscores): SPECIAL_API_KEY gives special, api, key.
_WORD = re.compile(r"[^\W\d_]{3,}")
# The same words in lower-cased ASCII text, found faster (tool outputs mostly are).
_ASCII_WORD = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True)
class MemoryEntry:
    id: str
    position: int  # 1-based index of the message in the conversation
    message_count: int
    preview: str
    text: str  # the stored middle
    original: str  # the whole original message content


class MemoryStore:
    """Memories with sequential ids ``m1``, ``m2``, …; deep copies are independent."""

    def __init__(self) -> None:
        self._db = _connect()
        # Probes may run model calls on threads; ids must stay sequential.
        self._lock = threading.Lock()

    def put(self, position: int, text: str, original: str, message_count: int = 1) -> MemoryEntry:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()
            entry = MemoryEntry(
                f"m{count + 1}", position, message_count, make_preview(text), text, original
            )
            self._db.execute(
                f"INSERT INTO entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (entry.id, position, message_count, entry.preview, text, original),
            )
            return entry

    def get(self, id: str) -> MemoryEntry | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM entries WHERE id = ?", (id,)).fetchone()
        return MemoryEntry(*row) if row else None

    def entries(self) -> list[MemoryEntry]:
        # rowid follows insertion, i.e. id order (m2 before m10, unlike text order).
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM entries ORDER BY rowid")
        return [MemoryEntry(*row) for row in rows]

    def originals(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT original FROM entries ORDER BY rowid")]

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT COUNT(*) FROM entries").fetchone()
        return int(count)

    def __deepcopy__(self, memo: dict[int, Any]) -> MemoryStore:
        # A forked strategy must not see memories its siblings store later.
        clone = MemoryStore.__new__(MemoryStore)
        clone._db = _connect()
        clone._lock = threading.Lock()
        with self._lock:
            self._db.backup(clone._db)
        memo[id(self)] = clone
        return clone


def _connect() -> sqlite3.Connection:
    # Autocommit: an open write transaction would make backup() (our deepcopy) wait forever.
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    db.execute(_SCHEMA)
    return db


def make_preview(middle: str) -> str:
    """First ~100 characters, then up to two lines that stand out from the rest.

    A line stands out when it holds words found in no other line: in a dump of
    400 similar JSON rows, that is the one odd row (e.g. a planted secret).
    """
    head, more = _collapsed_head(middle)
    notable = [line for line in _notable_lines(middle) if line not in head]
    if notable:
        return " … ".join([head, *notable])
    return head + (" …" if more else "")


def _collapsed_head(text: str) -> tuple[str, bool]:
    """The first PREVIEW_HEAD characters of ``text`` with each run of
    whitespace one space, and whether more follows.  Collapsing a start of
    the text gives a start of the collapsed text, so a long middle is not
    collapsed whole for its first hundred characters."""
    collapsed = " ".join(text[: 4 * PREVIEW_HEAD].split())
    if len(collapsed) <= PREVIEW_HEAD:  # short, or mostly whitespace: all of it decides
        collapsed = " ".join(text.split())
    return collapsed[:PREVIEW_HEAD], len(collapsed) > PREVIEW_HEAD


def _notable_lines(text: str) -> list[str]:
    lines = text.splitlines()
    if len(lines) < 2:
        return []  # a single line is already represented by the head
    # Lower-casing never makes or removes a line break: the lines stay aligned.
    lower = text.lower()
    word = _ASCII_WORD if lower.isascii() else _WORD
    words = [set(word.findall(line)) for line in lower.splitlines()]
    seen_in = Counter(chain.from_iterable(words))
    once = {w for w, lines_with_it in seen_in.items() if lines_with_it == 1}
    scored: list[tuple[int, int, str]] = []
    for index, (line, line_words) in enumerate(zip(lines, words, strict=True)):
        if len(line_words) < 2:
            continue
        unique = line_words & once
        if len(unique) >= 2:
            scored.append((-len(unique), index, _excerpt(line, unique)))
    best = sorted(scored)[:NOTABLE_LINES]
    # Show them in the order they occur in the text.
    return [line for _, _, line in sorted(best, key=lambda item: item[1])]


def _excerpt(line: str, unique: set[str]) -> str:
    """The line, trimmed to 120 characters around its first unusual word."""
    line = " ".join(line.split())
    if len(line) <= NOTABLE_LINE_CHARS:
        return line
    lower = line.lower()
    first = min(lower.find(word) for word in unique)
    start = max(0, min(first - 20, len(line) - NOTABLE_LINE_CHARS))
    return line[start : start + NOTABLE_LINE_CHARS]
