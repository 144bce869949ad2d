"""One model call read from a trace: the window it sent and what came back.

Every format's reader turns its chat spans into :class:`ChatCall`; the
session rebuilding (``sessions``) works on these alone."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .otlp import Span

Message = dict[str, Any]


@dataclass
class ChatCall:
    span: Span
    session: str  # the conversation it belongs to
    # The request's messages, system prompt included, in OpenAI chat format;
    # None when the trace captured no content for the call.
    messages: list[Message] | None
    output: list[Message] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class ReadStats:
    """What a reader found, for the importer's summary."""

    spans: int = 0
    chat_spans: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> spans


def session_key(span: Span, by_id: dict[str, Span], keys: tuple[str, ...]) -> str:
    """The first of ``keys`` set on the span or on one of its ancestors (a
    conversation id often sits only on the agent's root span); else the trace."""
    node: Span | None = span
    seen: set[str] = set()
    while node is not None and node.span_id not in seen:
        seen.add(node.span_id)
        for key in keys:
            value = node.attributes.get(key)
            if value not in (None, ""):
                return str(value)
        node = by_id.get(node.parent_id) if node.parent_id else None
    return f"trace-{span.trace_id}"


def span_call(
    span: Span,
    by_id: dict[str, Span],
    keys: tuple[str, ...],
    messages: list[Message] | None,
    output: list[Message],
    tools: list[dict[str, Any]],
    model: Any,
    tokens: tuple[Any, Any],
) -> ChatCall:
    """The call of a chat span of an OTLP trace: its session found by ``keys``
    (see ``session_key``), ``tokens`` the raw input and output token counts."""
    return ChatCall(
        span=span,
        session=session_key(span, by_id, keys),
        messages=messages,
        output=output,
        tools=tools,
        model=str(model or ""),
        input_tokens=int_or_none(tokens[0]),
        output_tokens=int_or_none(tokens[1]),
    )


def tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A chat-completions tool call; arguments that are not a string are
    JSON-encoded, as the request would have carried them."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False) if arguments is not None else ""
    call: dict[str, Any] = {}
    if call_id not in (None, ""):
        call["id"] = str(call_id)
    call["type"] = "function"
    call["function"] = {"name": str(name or "tool"), "arguments": arguments}
    return call


def json_value(value: Any) -> Any:
    """A JSON string attribute parsed; anything else (or text that is no JSON) as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def time_nanos(value: Any) -> int:
    """A time as nanoseconds since the epoch: from nanoseconds (int or float),
    or an ISO string; 0 when it is neither."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value:
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
        except ValueError:
            return 0
    return 0
