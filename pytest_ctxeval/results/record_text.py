"""A record as one line of JSON, the big values that a session's records share
written once.

The records of one session repeat its per-request series, its fact ledger and
(for probes that see the same window) the state of every fact: most of a
record's size (about 20 of 29 KB on a LoCoMo-size run).  A run points equal
values of one session at one object (``shared_values``), so the JSON text of
such an object is kept, by identity, and reused for the next record that
holds it.  The line is the same as ``json.dumps(data, sort_keys=True,
ensure_ascii=False)``: the other fields are written between the shared ones,
in key order, as JSON writes a mapping."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

# The fields a session's records share, most of a record's size.
SHARED_FIELDS = (
    "fact_ledger",
    "fact_survival",
    "session_requests",
    "session_prompt_tokens",
    "compaction_requests",
    "cache_breaks",
)
_SHARED = frozenset(SHARED_FIELDS)
# Texts kept: a few sessions' worth (each session keeps a handful of values).
KEPT_TEXTS = 256


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class TextsByIdentity:
    """The text ``write`` makes of a value, kept per value object; the object
    is held, so its id stays its own.  For the values a session's records
    share: equal values are one object (see ``shared_values``)."""

    def __init__(self, write: Callable[[Any], str]) -> None:
        self._write = write
        self._texts: dict[int, tuple[Any, str]] = {}
        # Dropping the oldest entry iterates the dict: safe should records
        # ever be written from more than one thread.
        self._lock = threading.Lock()

    def text(self, value: Any) -> str:
        found = self._texts.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        text = self._write(value)
        with self._lock:
            if len(self._texts) >= KEPT_TEXTS:
                del self._texts[next(iter(self._texts))]  # the oldest
            self._texts[id(value)] = (value, text)
        return text


_shared_texts = TextsByIdentity(dumps)


def written_once(value: Any) -> bool:
    """Whether a shared field's value is written from its kept text."""
    return type(value) in (dict, list) and bool(value)


def field_start(name: str) -> str:
    """Where a field starts in a record's line when a field comes before it
    (every shared field sorts after ``answer``): ``, "name": ``."""
    return f", {dumps(name)}: "


def shared_field_text(name: str, value: Any) -> str:
    """How a shared field stands in a record's line: its start, then the
    kept text of its value."""
    return field_start(name) + _shared_texts.text(value)


def record_dumps(data: dict[str, Any]) -> str:
    """``dumps(data)`` for a record's fields (str keys): the values of the
    shared fields from their kept text.  TypeError or ValueError, as
    ``json.dumps``, for a value JSON cannot write."""
    parts: list[str] = []
    between: dict[str, Any] = {}
    for key in sorted(data):
        value = data[key]
        if key in _SHARED and written_once(value):
            if between:
                parts.append(dumps(between)[1:-1])
                between = {}
            parts.append(f"{dumps(key)}: {_shared_texts.text(value)}")
        else:
            between[key] = value
    if between:
        parts.append(dumps(between)[1:-1])
    return "{" + ", ".join(parts) + "}"
