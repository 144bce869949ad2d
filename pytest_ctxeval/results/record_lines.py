"""Records read back from their lines without parsing again what the
session's previous record said.

A record's line repeats its session's shared values (see record_text and
shared_values): 20 of 29 KB on a LoCoMo-size run, parsed into objects only
for ``SharedValues`` to find them equal to the ones it holds and drop them.
Written as ``record_text`` writes them, the text of each value a session
holds is known.  A line that holds that text at that field's place is
parsed without it, and the record gets the object the session holds.

Which session a line belongs to is found by the text: the session read
last whose scenario and strategy the line names and whose values it holds.
The record parsed must then be of that session and lack every field cut
out (so each cut was the record's own field, not a look-alike nested inside
another value ahead of it); otherwise the line is parsed whole.  Either way
the record is the same."""

from __future__ import annotations

from typing import Any

from .record import ResultRecord
from .record_text import SHARED_FIELDS, dumps, field_start, shared_field_text, written_once
from .shared_values import SharedValues, session_of

Session = tuple[str, str, str]
# Sessions whose texts are tried, the last read first: under xdist the
# records of a scenario's strategies on both workers come interleaved.
RECENT_SESSIONS = 32
# Where a field's text starts, as record_text writes it: the shared fields,
# and the two that tell a line's session (with its scenario file).
_FIELD_STARTS = {name: field_start(name) for name in (*SHARED_FIELDS, "scenario", "strategy")}


class RecordLines:
    """Lines of a results file to records, a session's shared values held once."""

    def __init__(self) -> None:
        self._shared = SharedValues()
        # Per session: each shared value it holds, with its text in a line.
        self._texts: dict[Session, dict[str, tuple[Any, str]]] = {}
        # Per session: how its every line gives its scenario and its strategy.
        self._says: dict[Session, tuple[str, str]] = {}
        self._recent: list[Session] = []

    def record(self, line: str) -> ResultRecord:
        """The record of ``line``; ValueError when it is not one."""
        record = self._without_known_text(line)
        if record is None:
            record = ResultRecord.model_validate_json(line)
        self._shared.share(record)
        self._note(record)
        return record

    def _without_known_text(self, line: str) -> ResultRecord | None:
        found: dict[str, int] = {}  # where each field starts in the line, or -1

        def where(name: str) -> int:
            if name not in found:
                found[name] = line.find(_FIELD_STARTS[name])
            return found[name]

        def says(name: str, text: str) -> bool:
            at = where(name)
            return at >= 0 and line.startswith(text, at)

        for session in self._recent:
            scenario, strategy = self._says[session]
            if not (says("strategy", strategy) and says("scenario", scenario)):
                continue
            held = self._texts[session]
            cuts = [
                (where(name), where(name) + len(text), name, value)
                for name, (value, text) in held.items()
                if says(name, text)
            ]
            if cuts:
                return self._parsed_without(line, session, cuts)
        return None

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

    def _note(self, record: ResultRecord) -> None:
        """Hold the text of each value the record's session now holds."""
        session = session_of(record)
        texts = self._texts.setdefault(session, {})
        if session not in self._says:
            _, scenario, strategy = session
            self._says[session] = (
                f"{_FIELD_STARTS['scenario']}{dumps(scenario)}",
                f"{_FIELD_STARTS['strategy']}{dumps(strategy)}",
            )
        for name in SHARED_FIELDS:
            value = getattr(record, name, None)
            if not written_once(value):
                continue
            held = texts.get(name)
            if held is None or held[0] is not value:
                texts[name] = (value, shared_field_text(name, value))
        if self._recent and self._recent[0] == session:
            return
        if session in self._recent:
            self._recent.remove(session)
        self._recent.insert(0, session)
        for gone in self._recent[RECENT_SESSIONS:]:  # its next line, if any, is read whole
            del self._texts[gone], self._says[gone]
        del self._recent[RECENT_SESSIONS:]
