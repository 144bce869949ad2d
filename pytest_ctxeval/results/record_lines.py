"""Records read back from their lines without parsing again what the
session's previous record said.

A record's line repeats its session's shared values (see record_text and
shared_values): 20 of 29 KB on a LoCoMo-size run, parsed into objects only
for ``SharedValues`` to find them equal to the ones it holds and drop them.
Written as ``record_text`` writes them, the text of each value a session
holds is known.  A line that holds that text at that field's place is
parsed without it, and the record gets the object the session holds.

Which session a line belongs to is found by the text: of the sessions read
last, the one its scenario and strategy name (the last read, should two
scenario files hold the same scenario id).  A value's text is held once the
value has come twice in a row, and only when it is long enough to pay for
looking (a file of small records reads within 5 % of a plain parse).  The
record parsed must then be of that session and lack every field cut out
(so each cut was the record's own field, not a look-alike nested inside
another value ahead of it); otherwise the line is parsed whole.  Either way
the record is the same."""

from __future__ import annotations

from typing import Any

from .record import ResultRecord
from .record_text import SHARED_FIELDS, dumps, field_start, shared_field_text, written_once
from .shared_values import SharedValues, session_of

Session = tuple[str, str, str]
# Sessions held, the last read: under xdist the records of a scenario's
# strategies on both workers come interleaved.
RECENT_SESSIONS = 32
# The shortest value text worth cutting out: below it, finding it costs
# about what parsing it does.
MIN_CUT = 512
# Where a field's text starts, as record_text writes it: the shared fields,
# and the two that name a line's session (with its scenario file).
_FIELD_STARTS = {name: field_start(name) for name in (*SHARED_FIELDS, "scenario", "strategy")}


class RecordLines:
    """Lines of a results file to records, a session's shared values held once."""

    def __init__(self) -> None:
        self._shared = SharedValues()
        # The sessions read last, the least recent first: each shared value
        # it holds, with its text in a line once the value has come twice (a
        # session of one record, or a value that changes with every record,
        # is not worth writing out; "" for a text too short to pay).
        self._held: dict[Session, dict[str, tuple[Any, str | None]]] = {}
        # Those of them holding a text worth cutting, by how a line names
        # them (see _name_of).
        self._named: dict[tuple[str, str], Session] = {}

    def record(self, line: str) -> ResultRecord:
        """The record of ``line``; ValueError when it is not one."""
        record = self._without_known_text(line)
        if record is None:
            record = ResultRecord.model_validate_json(line)
        self._note(record, self._shared.share(record))
        return record

    def _without_known_text(self, line: str) -> ResultRecord | None:
        if not self._named:
            return None
        session = self._named.get((_string_at(line, "scenario"), _string_at(line, "strategy")))
        if session is None:
            return None
        cuts = []
        for name, (value, text) in self._held[session].items():
            if not text:
                continue
            at = line.find(_FIELD_STARTS[name])
            if at >= 0 and line.startswith(text, at):
                cuts.append((at, at + len(text), name, value))
        return self._parsed_without(line, session, cuts) if cuts else None

    @staticmethod
    def _parsed_without(
        line: str, session: Session, cuts: list[tuple[int, int, str, Any]]
    ) -> ResultRecord | None:
        cuts.sort()
        parts, kept_from = [], 0
        for start, end, _, _ in cuts:
            parts.append(line[kept_from:start])
            kept_from = end
        parts.append(line[kept_from:])
        try:
            record = ResultRecord.model_validate_json("".join(parts))
        except ValueError:  # a cut that was not the field's own: read it whole
            return None
        given = record.model_fields_set  # extra fields too
        if session_of(record) != session or any(name in given for _, _, name, _ in cuts):
            return None
        for _, _, name, value in cuts:
            setattr(record, name, value)
        return record

    def _note(self, record: ResultRecord, holds: dict[str, Any]) -> None:
        """Hold each shared value the record holds (``holds``), and its text
        once it has come twice; the session becomes the most recent."""
        session = session_of(record)
        held = self._held.pop(session, {})
        self._held[session] = held
        for name, value in holds.items():
            if not written_once(value):
                continue
            kept = held.get(name)
            if kept is None or kept[0] is not value:
                held[name] = (value, None)  # a new value: it may not come again
            elif kept[1] is None:  # the same value twice: its text, if cutting it pays
                text = shared_field_text(name, value)
                held[name] = (value, text if len(text) >= MIN_CUT else "")
                if len(text) >= MIN_CUT:
                    self._named[_name_of(session)] = session
        while len(self._held) > RECENT_SESSIONS:  # its next line, if any, is read whole
            gone = next(iter(self._held))
            del self._held[gone]
            self._named.pop(_name_of(gone), None)


def _name_of(session: Session) -> tuple[str, str]:
    """How a line names ``session``: its scenario and strategy as JSON text."""
    _, scenario, strategy = session
    return dumps(scenario), dumps(strategy)


def _string_at(line: str, name: str) -> str:
    """The JSON string text of field ``name`` in ``line`` (quotes included),
    or "" when it is not found as written; what a look-alike gives is caught
    once the line is parsed."""
    at = line.find(_FIELD_STARTS[name])
    if at < 0:
        return ""
    begin = at + len(_FIELD_STARTS[name])
    end = line.find('", ', begin)
    return line[begin : end + 1] if end >= 0 else ""
