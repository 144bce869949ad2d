"""``otel``: OpenTelemetry GenAI semantic conventions.

A chat span is one with ``gen_ai.operation.name`` ``chat`` (or
``text_completion``/``generate_content``), never chosen by its name or
kind.  Its messages come from, in this order:

- ``gen_ai.input.messages`` / ``gen_ai.output.messages`` and
  ``gen_ai.system_instructions`` (JSON strings of role + parts; newer
  instrumentations),
- the older per-message events ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` and ``gen_ai.choice``, as span events or as log
  records of a logs file joined by trace and span id (``--logs``).

Tool definitions come from ``gen_ai.tool.definitions`` where the span has
them (often it has none), the conversation from ``gen_ai.conversation.id``
on the span or any of its ancestors."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from .calls import ChatCall, Message, ReadStats, json_value, span_call, tool_call
from .otlp import Event, Span

CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
NO_CONTENT = "chat spans with no message content captured (content capture was off)"


def read_genai_calls(
    spans: list[Span], logs: list[Event], session_attribute: str | None, stats: ReadStats
) -> list[ChatCall]:
    by_id = {s.span_id: s for s in spans}
    events_of: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for event in logs:
        events_of[(event.trace_id, event.span_id)].append(event)
    keys = (session_attribute,) if session_attribute else CONVERSATION_KEYS
    calls = []
    for span in spans:
        operation = span.attributes.get("gen_ai.operation.name")
        if operation not in CHAT_OPERATIONS:
            if operation is None and not span.attributes.get("openinference.span.kind"):
                stats.skipped["spans of no GenAI kind (no gen_ai.operation.name)"] += 1
            elif operation is not None:
                stats.skipped[f"GenAI spans that are no chat ({operation})"] += 1
            continue
        stats.chat_spans += 1
        events = span.events + events_of.get((span.trace_id, span.span_id), [])
        messages, output = _from_attributes(span.attributes)
        if messages is None:
            messages, output = _from_events(events)
        if messages is None:
            stats.skipped[NO_CONTENT] += 1
        attrs = span.attributes
        model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
        tools = _tools(attrs.get("gen_ai.tool.definitions"))
        tokens = (attrs.get("gen_ai.usage.input_tokens"), attrs.get("gen_ai.usage.output_tokens"))
        calls.append(span_call(span, by_id, keys, messages, output, tools, model, tokens))
    return calls


def _from_attributes(attrs: dict[str, Any]) -> tuple[list[Message] | None, list[Message]]:
    raw = json_value(attrs.get("gen_ai.input.messages"))
    if not isinstance(raw, list):
        return None, []
    messages: list[Message] = []
    instructions = json_value(attrs.get("gen_ai.system_instructions"))
    if isinstance(instructions, list) and instructions:
        messages.append({"role": "system", "content": _parts_text(instructions)})
    elif isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    for item in raw:
        messages.extend(_parts_message(item))
    output: list[Message] = []
    for item in json_value(attrs.get("gen_ai.output.messages")) or []:
        output.extend(_parts_message(item))
    return messages, output


def _parts_message(item: Any) -> list[Message]:
    """One GenAI message (role + parts) as chat-completions messages: tool
    responses become one ``tool`` message each, whatever role carried them."""
    if not isinstance(item, dict):
        return []
    role = str(item.get("role") or "user")
    parts = [p for p in item.get("parts") or [] if isinstance(p, dict)]
    responses = [p for p in parts if p.get("type") == "tool_call_response"]
    found: list[Message] = [
        {"role": "tool", "tool_call_id": str(p.get("id") or ""), "content": _text(_response(p))}
        for p in responses
    ]
    calls = [
        tool_call(p.get("id"), p.get("name"), p.get("arguments"))
        for p in parts
        if p.get("type") == "tool_call"
    ]
    texts = [p for p in parts if p.get("type") not in ("tool_call", "tool_call_response")]
    if texts or calls or not responses:
        message: Message = {"role": role, "content": _parts_text(texts) if texts else None}
        if role != "assistant" and message["content"] is None:
            message["content"] = ""
        if calls:
            message["tool_calls"] = calls
        found.append(message)
    return found


def _response(part: dict[str, Any]) -> Any:
    # The conventions name it "response"; pydantic-ai writes "result".
    return part["response"] if "response" in part else part.get("result")


def _from_events(events: list[Event]) -> tuple[list[Message] | None, list[Message]]:
    messages: list[Message] = []
    output: list[Message] = []
    for event in events:
        body = event.body if isinstance(event.body, dict) else event.attributes
        if event.name in _MESSAGE_EVENTS:
            messages.append(_event_message(_MESSAGE_EVENTS[event.name], body))
        elif event.name == "gen_ai.choice":
            inner = body.get("message")
            output.append(_event_message("assistant", inner if isinstance(inner, dict) else body))
    if not messages:
        return None, output
    return messages, output


def _event_message(role: str, body: dict[str, Any]) -> Message:
    role = str(body.get("role") or role)
    content = body.get("content")
    message: Message = {"role": role}
    if role == "tool":
        message["tool_call_id"] = str(body.get("id") or body.get("tool_call_id") or "")
    message["content"] = (
        _text(content) if content is not None else (None if role == "assistant" else "")
    )
    calls = body.get("tool_calls")
    if isinstance(calls, list) and calls:
        message["tool_calls"] = [
            tool_call(
                c.get("id"),
                (c.get("function") or {}).get("name"),
                (c.get("function") or {}).get("arguments"),
            )
            for c in calls
            if isinstance(c, dict)
        ]
    return message


def _tools(value: Any) -> list[dict[str, Any]]:
    """GenAI tool definitions as chat-completions tools."""
    items = json_value(value)
    if not isinstance(items, list):
        return []
    tools = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("function"), dict):
            tools.append(item)
            continue
        function: dict[str, Any] = {"name": str(item.get("name") or "tool")}
        if item.get("description") is not None:
            function["description"] = item["description"]
        if item.get("parameters") is not None:
            function["parameters"] = item["parameters"]
        tools.append({"type": str(item.get("type") or "function"), "function": function})
    return tools


def _parts_text(parts: list[Any]) -> str:
    texts = []
    for part in parts:
        if isinstance(part, dict):
            content = part.get("content")
            texts.append(_text(content) if content is not None else f"[{part.get('type')}]")
        elif isinstance(part, str):
            texts.append(part)
    return "\n".join(texts)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
