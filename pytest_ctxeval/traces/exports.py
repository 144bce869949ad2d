"""``langfuse`` and ``langsmith``: their documented JSON/JSONL exports.

- Langfuse: observations, as the Observations API and the UI's table export
  give them (a JSON list, JSON Lines, ``{"data": [...]}``, or a trace
  download ``{"observations": [...]}``).  A call is an observation of type
  ``GENERATION``; its ``input`` is the messages sent (a list, or an object
  with ``messages`` and ``tools``), its ``output`` the reply; the session is
  ``sessionId``, else the trace.
- LangSmith: runs (``client.list_runs`` written as JSON Lines, or a JSON
  list).  A call is a run with ``run_type`` ``llm``; ``inputs.messages`` (a
  list, or LangChain's list of lists), ``inputs.tools``, ``outputs`` as
  chat-completions ``choices`` or LangChain ``generations``; the session is
  ``extra.metadata`` ``session_id``/``thread_id``/``conversation_id``,
  else the trace.

Both are read into the same calls as OTLP traces."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..scenario.importers._common import TranscriptError, Where, type_name
from .calls import ChatCall, Message, ReadStats, time_nanos, tool_call
from .otlp import Span

_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
THREAD_KEYS = ("session_id", "thread_id", "conversation_id")


def records(text: str, source: str) -> list[tuple[Where, dict[str, Any]]]:
    """Objects of a JSON document (a list, ``data``, ``observations``) or of JSON Lines."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TranscriptError(
                    source, Where(line=number), f"invalid JSON: {exc.msg} at column {exc.colno}"
                ) from None
            found.append((Where(line=number), value))
    else:
        if isinstance(data, dict):
            data = data.get("data") or data.get("observations") or data.get("runs") or [data]
        if not isinstance(data, list):
            raise TranscriptError(
                source, None, f"expected a list of objects, got {type_name(data)}"
            )
        found = [(Where(item=i), v) for i, v in enumerate(data)]
    return [(w, v) for w, v in found if isinstance(v, dict)]


def read_langfuse_calls(
    text: str, source: str, session_attribute: str | None, stats: ReadStats
) -> list[ChatCall]:
    key = session_attribute or "sessionId"

    def call(item: dict[str, Any], where: Where) -> ChatCall:
        trace = str(item.get("traceId") or item.get("trace_id") or "")
        session = item.get(key) or (item.get("metadata") or {}).get(key)
        start = item.get("startTime")
        parts = (item.get("input"), item.get("output"), item.get("model"))
        return _export_call(item, where, trace, session, start, parts)

    kind = ("type", "GENERATION", "observations that are no generation")
    return _chat_calls(text, source, stats, kind, "generations", call)


def read_langsmith_calls(
    text: str, source: str, session_attribute: str | None, stats: ReadStats
) -> list[ChatCall]:
    keys = (session_attribute,) if session_attribute else THREAD_KEYS

    def call(item: dict[str, Any], where: Where) -> ChatCall:
        trace = str(item.get("trace_id") or item.get("id") or "")
        metadata = (item.get("extra") or {}).get("metadata") or {}
        session = next((metadata[k] for k in keys if metadata.get(k)), None)
        start = item.get("start_time")
        parts = (item.get("inputs"), item.get("outputs"), metadata.get("ls_model_name"))
        return _export_call(item, where, trace, session, start, parts)

    kind = ("run_type", "llm", "runs that are no llm call")
    return _chat_calls(text, source, stats, kind, "llm runs", call)


def _export_call(
    item: dict[str, Any],
    where: Where,
    trace: str,
    session: Any,
    start: Any,
    parts: tuple[Any, Any, Any],
) -> ChatCall:
    """A call of an export; ``parts`` are its raw request, reply and model."""
    request, reply, model = parts
    messages, tools = _request(request)
    return ChatCall(
        span=_span(item, trace, str(item.get("id") or ""), start, where),
        session=str(session) if session else f"trace-{trace}",
        messages=messages,
        output=_reply(reply),
        tools=tools,
        model=str(model or ""),
    )


def _chat_calls(
    text: str,
    source: str,
    stats: ReadStats,
    kind: tuple[str, str, str],
    calls_are: str,
    call: Callable[[dict[str, Any], Where], ChatCall],
) -> list[ChatCall]:
    """The calls among an export's records: those whose ``kind`` field (field,
    value, what the others are called) has the value, each read by ``call``."""
    field, wanted, others = kind
    calls = []
    for where, item in records(text, source):
        stats.spans += 1
        found = str(item.get(field) or "")
        if found != wanted:
            stats.skipped[f"{others} ({found or 'no ' + field})"] += 1
            continue
        stats.chat_spans += 1
        chat = call(item, where)
        if chat.messages is None:
            stats.skipped[f"{calls_are} with no input messages captured"] += 1
        calls.append(chat)
    return calls


def _request(value: Any) -> tuple[list[Message] | None, list[dict[str, Any]]]:
    tools: list[dict[str, Any]] = []
    if isinstance(value, dict):
        tools = [t for t in value.get("tools") or [] if isinstance(t, dict)]
        value = value.get("messages")
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        value = value[0]  # LangChain's batch of message lists: one request
    if not isinstance(value, list) or not value:
        return None, tools
    return [_message(m) for m in value if isinstance(m, dict)], tools


def _reply(value: Any) -> list[Message]:
    if isinstance(value, dict):
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return [_message(choices[0].get("message") or {})]
        generations = value.get("generations")
        if isinstance(generations, list) and generations:
            first = generations[0][0] if isinstance(generations[0], list) else generations[0]
            if isinstance(first, dict):
                return [
                    _message(
                        first.get("message") or {"role": "assistant", "content": first.get("text")}
                    )
                ]
        if "role" in value or "content" in value or "type" in value:
            return [_message(value)]
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    return []


def _message(raw: dict[str, Any]) -> Message:
    """A chat-completions message from one, or from LangChain's serialised
    ``{"type": "human", "data": {...}}`` / ``{"lc": 1, "kwargs": {...}}``."""
    if "role" in raw:
        return raw
    inner = raw.get("data") or raw.get("kwargs") or raw
    kind = str(raw.get("type") or inner.get("type") or "")
    if not kind and isinstance(raw.get("id"), list):  # {"lc": 1, "id": [..., "HumanMessage"]}
        kind = str(raw["id"][-1]).removesuffix("Message").lower()
    role = _LANGCHAIN_ROLES.get(kind, kind or "user")
    message: Message = {"role": role, "content": inner.get("content")}
    calls = inner.get("tool_calls")
    if role == "assistant" and isinstance(calls, list) and calls:
        message["tool_calls"] = [
            tool_call(c.get("id"), c.get("name"), c.get("args"))
            for c in calls
            if isinstance(c, dict)
        ]
    if role == "tool":
        message["tool_call_id"] = str(inner.get("tool_call_id") or "")
    if message["content"] is None and role != "assistant":
        message["content"] = ""
    return message


def _span(item: dict[str, Any], trace: str, own: str, start: Any, where: Where) -> Span:
    return Span(
        trace_id=trace,
        span_id=own,
        parent_id="",
        name=str(item.get("name") or ""),
        kind=0,
        start_ns=_nanos(start),
        end_ns=0,
        attributes={},
        where=where,
    )


def _nanos(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1e14:
        return int(value * 1e6)  # epoch milliseconds
    return time_nanos(value)
