"""The records of one session repeat what belongs to the session: its
per-request series, its fact ledger, and (for probes that see the same
window) the state of every fact.  Read back from JSON (an xdist worker's
record, a results file), each record holds a copy of its own: on a
LoCoMo-size run some 250 KB of objects per record, 4.6 GB in all on the
controller.  A run keeps each of those values once per session, and so
does reading a results file back (a rerun keeping earlier records,
``ctxeval report``, ``load_results``): a record whose value equals the one
the session's previous record kept gets that object instead.  Records are
read, never changed in place, once kept."""

from __future__ import annotations

from typing import Any

from .record import ResultRecord
from .record_text import SHARED_FIELDS as SHARED_FIELDS


class SharedValues:
    def __init__(self) -> None:
        # Per session (scenario file, scenario, strategy): the values kept last.
        self._kept: dict[tuple[str, str, str], dict[str, Any]] = {}

    def share(self, record: ResultRecord) -> dict[str, Any]:
        """Point ``record``'s shareable fields at the values its session kept,
        where they are equal; the values it then holds, by field (those set)."""
        kept = self._kept.setdefault(session_of(record), {})
        holds = {}
        for name in SHARED_FIELDS:
            value = getattr(record, name, None)
            if not value:
                continue
            before = kept.get(name)
            if before is not value:
                if same_value(before, value):
                    setattr(record, name, before)
                    value = before
                else:
                    kept[name] = value
            holds[name] = value
        return holds

    def forget(self, session: tuple[str, str, str]) -> None:
        """Drop what ``session`` (scenario file, scenario, strategy) kept: it
        has no record to come."""
        self._kept.pop(session, None)


def session_of(record: ResultRecord) -> tuple[str, str, str]:
    """The session a record belongs to: (scenario file, scenario, strategy)."""
    return (record.scenario_file, record.scenario, record.strategy)


def same_value(before: Any, value: Any) -> bool:
    """Whether a kept value may stand for ``value``: the same object, or an
    equal one of the same type (``1`` is not ``True``)."""
    return before is value or (
        before is not None and type(before) is type(value) and before == value
    )
