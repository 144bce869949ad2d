"""``ctxeval import phoenix --endpoint URL --project NAME``: spans from a
running Phoenix server, through its REST API (``GET
/v1/projects/{project}/spans``, page by page).

Phoenix's span export is not OTLP/JSON: snake_case keys, the span kind as a
name (``span_kind: "LLM"``, taken out of the attributes), ids in hex under
``context``, times as ISO strings or float nanoseconds, attributes a plain
mapping.  It is read on its own terms into the same spans the OpenInference
reader takes."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any

from ..scenario.importers._common import TranscriptError, Where
from .calls import time_nanos
from .otlp import Span

PAGE = 1000
MAX_PAGES = 1000  # a million spans: beyond that, narrow it with --since or --session


def fetch_spans(
    endpoint: str,
    project: str,
    *,
    since: str | None = None,
    session: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 30.0,
) -> list[Span]:
    """Every span of ``project`` (from ``since`` on), or of one session's traces."""
    base = endpoint.rstrip("/")
    shown = f"{base} project {project!r}"
    params: dict[str, str] = {"limit": str(PAGE)}
    if since is not None:
        params["start_time"] = _iso(since, shown)
    raw: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        query = {**params, **({"cursor": cursor} if cursor else {})}
        url = (
            f"{base}/v1/projects/{urllib.parse.quote(project, safe='')}/spans?"
            + urllib.parse.urlencode(query)
        )
        page = _get(url, shown, api_key, timeout_s)
        raw.extend(s for s in page.get("data") or [] if isinstance(s, dict))
        cursor = page.get("next_cursor")
        if not cursor:
            break
    spans = [phoenix_span(s, Where(item=i)) for i, s in enumerate(raw)]
    if session is not None:
        traces = {s.trace_id for s in spans if s.attributes.get("session.id") == session}
        spans = [s for s in spans if s.trace_id in traces]
        if not spans:
            raise TranscriptError(shown, None, f"no span of session {session!r}")
    return spans


def phoenix_span(raw: dict[str, Any], where: Where) -> Span:
    found = raw.get("context")
    context: dict[str, Any] = found if isinstance(found, dict) else {}
    attributes = dict(raw.get("attributes") or {})
    kind = raw.get("span_kind")
    if kind and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = str(kind)
    return Span(
        trace_id=str(context.get("trace_id") or ""),
        span_id=str(context.get("span_id") or ""),
        parent_id=str(raw.get("parent_id") or ""),
        name=str(raw.get("name") or ""),
        kind=0,
        start_ns=time_nanos(raw.get("start_time")),
        end_ns=time_nanos(raw.get("end_time")),
        attributes=attributes,
        where=where,
    )


def _get(url: str, shown: str, api_key: str | None, timeout_s: float) -> dict[str, Any]:
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=timeout_s
        ) as response:
            data = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        hint = " (is the project name right?)" if exc.code == 404 else ""
        raise TranscriptError(shown, None, f"the server answered HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TranscriptError(shown, None, f"cannot reach the Phoenix server: {reason}") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TranscriptError(
            shown, None, "the server's answer is not JSON (is this Phoenix?)"
        ) from None
    if not isinstance(data, dict):
        raise TranscriptError(shown, None, "the server's answer is not a page of spans")
    return data


def _iso(value: str, shown: str) -> str:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).isoformat()
    except ValueError:
        raise TranscriptError(
            shown,
            None,
            f"--since {value!r}: expected an ISO date or time, e.g. 2026-11-30T08:00:00Z",
        ) from None
