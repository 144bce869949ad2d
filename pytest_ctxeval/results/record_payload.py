"""A record's trip from an xdist worker to the controller, without what the
previous record of its session carried already.

The records of one session repeat its per-request series, its fact ledger and
often its fact states: most of a record (about 20 of 29 KB on a LoCoMo-size
run).  Sent whole, every record made the controller read, parse and validate
all of it again, a third of a core on a large run while the two workers
shared the rest.  A worker leaves out a shared field whose value equals the
one it last sent for the same session, and names it; the controller puts back
the value it kept from that worker for that session.  Each worker's reports
reach the controller in the order it sent them, so the value named is there;
a worker that starts over (a replacement after a crash) sends everything
again."""

from __future__ import annotations

from typing import Any

from .record import ResultRecord
from .record_text import SHARED_FIELDS
from .shared_values import same_value, session_of

Session = tuple[str, str, str]


class PayloadSender:
    """Worker side: each record as JSON, less the shared values its session sent before."""

    def __init__(self) -> None:
        self._sent: dict[Session, dict[str, Any]] = {}

    def payload(self, record: ResultRecord) -> tuple[str, list[str]]:
        """(the record's JSON, the shared fields left out of it)."""
        sent = self._sent.setdefault(session_of(record), {})
        same: list[str] = []
        for name in SHARED_FIELDS:
            value = getattr(record, name, None)
            if not value:
                continue
            if same_value(sent.get(name), value):
                same.append(name)
            else:
                sent[name] = value
        return record.model_dump_json(exclude=set(same)), same


class PayloadReceiver:
    """Controller side: each worker's records made whole again."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, Session], dict[str, Any]] = {}

    def record(self, payload: str, same: list[str], worker: str) -> ResultRecord:
        record = ResultRecord.model_validate_json(payload)
        kept = self._kept.setdefault((worker, session_of(record)), {})
        for name in SHARED_FIELDS:
            if name in same:
                if name in kept:
                    setattr(record, name, kept[name])
                else:  # not expected: reports come in the order they were sent
                    record.error = record.error or (
                        f"the worker sent {name} as its earlier record's, which never arrived"
                    )
            else:
                value = getattr(record, name, None)
                if value:
                    kept[name] = value
        return record
