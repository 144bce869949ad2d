"""OTLP JSON files as exporters write them: spans and log records.

The file format is JSON Lines, one export request per line
(``{"resourceSpans": [...]}`` or ``{"resourceLogs": [...]}``); the
collector's file exporter writes hex ids and integer enums, 64-bit integers
as strings, while protobuf's own JSON mapping (and tools built on it) writes
base64 ids and enum names.  Both are read; a file that is one JSON document
over several lines is read too."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..scenario.importers._common import TranscriptError, Where, type_name

_HEX = re.compile(r"[0-9a-fA-F]+")
SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}


@dataclass
class Event:
    """A span event or a log record: its name, time, attributes and body."""

    name: str
    time_ns: int
    attributes: dict[str, Any]
    body: Any = None
    trace_id: str = ""
    span_id: str = ""


@dataclass
class Span:
    trace_id: str  # hex, lower case
    span_id: str
    parent_id: str  # "" for a root span
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    where: Where
    events: list[Event] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return f"{self.trace_id}/{self.span_id}"


def export_requests(text: str, source: str) -> list[tuple[Where, dict[str, Any]]]:
    """Each export request in the file, with its line."""
    found: list[tuple[Where, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if not found:
                return _one_document(text, source)
            raise TranscriptError(
                source, Where(line=number), f"invalid JSON: {exc.msg} at column {exc.colno}"
            ) from None
        if not isinstance(value, dict):
            raise TranscriptError(
                source,
                Where(line=number),
                f"expected an OTLP export request, got {type_name(value)}",
            )
        found.append((Where(line=number), value))
    return found


def _one_document(text: str, source: str) -> list[tuple[Where, dict[str, Any]]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            source, Where(line=exc.lineno), f"invalid JSON: {exc.msg} at column {exc.colno}"
        ) from None
    if not isinstance(value, dict):
        raise TranscriptError(
            source, None, f"expected an OTLP export request, got {type_name(value)}"
        )
    return [(Where(line=1), value)]


def read_spans(text: str, source: str) -> list[Span]:
    spans: list[Span] = []
    for where, request in export_requests(text, source):
        for resource_spans in _list(request, "resourceSpans", "resource_spans"):
            resource = attributes(_get(resource_spans.get("resource") or {}, "attributes"))
            for scope in _list(resource_spans, "scopeSpans", "scope_spans"):
                for raw in _list(scope, "spans"):
                    spans.append(_span(raw, resource, where, source))
    return spans


def read_log_events(text: str, source: str) -> list[Event]:
    """Every log record of an OTLP logs file (GenAI message events of older
    instrumentations are log records tied to their span)."""
    events: list[Event] = []
    for _, request in export_requests(text, source):
        for resource_logs in _list(request, "resourceLogs", "resource_logs"):
            for scope in _list(resource_logs, "scopeLogs", "scope_logs"):
                for raw in _list(scope, "logRecords", "log_records"):
                    attrs = attributes(raw.get("attributes"))
                    name = str(raw.get("eventName") or attrs.get("event.name") or "")
                    events.append(
                        Event(
                            name=name,
                            time_ns=nanos(
                                _get(raw, "timeUnixNano") or _get(raw, "observedTimeUnixNano")
                            ),
                            attributes=attrs,
                            body=any_value(raw.get("body")),
                            trace_id=span_id(_get(raw, "traceId")),
                            span_id=span_id(_get(raw, "spanId")),
                        )
                    )
    return events


def _span(raw: dict[str, Any], resource: dict[str, Any], where: Where, source: str) -> Span:
    trace = span_id(_get(raw, "traceId"))
    own = span_id(_get(raw, "spanId"))
    if not trace or not own:
        raise TranscriptError(source, where, f"span {raw.get('name')!r} has no traceId/spanId")
    kind = raw.get("kind", 0)
    events = [
        Event(
            name=str(e.get("name", "")),
            time_ns=nanos(_get(e, "timeUnixNano")),
            attributes=attributes(e.get("attributes")),
        )
        for e in raw.get("events") or []
        if isinstance(e, dict)
    ]
    return Span(
        trace_id=trace,
        span_id=own,
        parent_id=span_id(_get(raw, "parentSpanId")),
        name=str(raw.get("name", "")),
        kind=SPAN_KINDS.get(kind, 0) if isinstance(kind, str) else int(kind or 0),
        start_ns=nanos(_get(raw, "startTimeUnixNano")),
        end_ns=nanos(_get(raw, "endTimeUnixNano")),
        attributes=attributes(raw.get("attributes")),
        where=where,
        events=events,
        resource=resource,
    )


def span_id(value: Any) -> str:
    """A trace or span id as lower-case hex, from hex or base64."""
    if not isinstance(value, str) or not value:
        return ""
    if len(value) in (16, 32) and _HEX.fullmatch(value):
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value


def nanos(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return 0
    try:
        return int(float(value)) if isinstance(value, float) else int(value)
    except (TypeError, ValueError):
        return 0


def attributes(items: Any) -> dict[str, Any]:
    """OTLP key/value attributes as a plain mapping."""
    found: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = any_value(item.get("value"))
    return found


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as plain data."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("intValue", "int_value"):
        if key in value:
            return nanos(value[key])
    for key in ("doubleValue", "double_value"):
        if key in value:
            return float(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [any_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return attributes((value[key] or {}).get("values"))
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None


def _get(raw: dict[str, Any], camel: str) -> Any:
    if camel in raw:
        return raw[camel]
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
    return raw.get(snake)


def _list(raw: dict[str, Any], *keys: str) -> list[dict[str, Any]]:
    for key in keys:
        value = raw.get(key)
        if isinstance(value, list):
            return [v for v in value if isinstance(v, dict)]
    return []
