"""``openinference``: OpenInference spans (Arize Phoenix and its instrumentations).

A chat span is one whose ``openinference.span.kind`` is ``LLM`` (they are
not CLIENT spans, and their names vary).  The window is the raw request in
``input.value`` when it holds one (``messages``, ``tools``: exactly what was
sent), else the flattened ``llm.input_messages.N.message.*`` attributes,
their indices sorted as numbers; tools then come from
``llm.tools.N.tool.json_schema``.  The conversation is ``session.id``, on
the span or an ancestor."""

from __future__ import annotations

import re
from typing import Any

from .calls import ChatCall, Message, ReadStats, json_value, span_call, tool_call
from .otlp import Span

SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
NO_CONTENT = "LLM spans with no input messages captured (hidden inputs, or none recorded)"
_INDEX = re.compile(r"^(\d+)\.(.+)$")


def read_openinference_calls(
    spans: list[Span], session_attribute: str | None, stats: ReadStats
) -> list[ChatCall]:
    by_id = {s.span_id: s for s in spans}
    keys = (session_attribute,) if session_attribute else SESSION_KEYS
    calls = []
    for span in spans:
        kind = span.attributes.get("openinference.span.kind")
        if kind != "LLM":
            reason = (
                f"OpenInference spans that are no LLM call ({kind})"
                if kind
                else "spans of no OpenInference kind"
            )
            stats.skipped[reason] += 1
            continue
        stats.chat_spans += 1
        attrs = span.attributes
        request = json_value(attrs.get("input.value")) if _is_json(attrs) else None
        messages: list[Message] | None
        tools: list[dict[str, Any]]
        if isinstance(request, dict) and isinstance(request.get("messages"), list):
            messages = [m for m in request["messages"] if isinstance(m, dict)]
            tools = [t for t in request.get("tools") or [] if isinstance(t, dict)]
        else:
            messages = flattened_messages(attrs, "llm.input_messages") or None
            tools = [
                t
                for t in (
                    json_value(v.get("tool.json_schema")) for v in _indexed(attrs, "llm.tools")
                )
                if isinstance(t, dict)
            ]
        if messages is None:
            stats.skipped[NO_CONTENT] += 1
        output = flattened_messages(attrs, "llm.output_messages")
        model = attrs.get("llm.model_name")
        tokens = (attrs.get("llm.token_count.prompt"), attrs.get("llm.token_count.completion"))
        calls.append(span_call(span, by_id, keys, messages, output, tools, model, tokens))
    return calls


def flattened_messages(attrs: dict[str, Any], prefix: str) -> list[Message]:
    """``prefix.N.message.*`` attributes as chat-completions messages, in
    numeric order of N (``10`` after ``9``)."""
    messages = []
    for fields in _indexed(attrs, prefix):
        role = str(fields.get("message.role") or "user")
        message: Message = {"role": role}
        if role == "tool" and fields.get("message.tool_call_id") is not None:
            message["tool_call_id"] = str(fields["message.tool_call_id"])
        if fields.get("message.name") is not None:
            message["name"] = str(fields["message.name"])
        content = fields.get("message.content")
        if content is None:
            parts = [
                p.get("message_content.text")
                for p in _indexed(fields, "message.contents")
                if p.get("message_content.text") is not None
            ]
            content = "\n".join(str(p) for p in parts) if parts else None
        message["content"] = content if content is not None or role == "assistant" else ""
        calls = [
            tool_call(
                c.get("tool_call.id"),
                c.get("tool_call.function.name"),
                c.get("tool_call.function.arguments"),
            )
            for c in _indexed(fields, "message.tool_calls")
        ]
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
    return messages


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The groups ``prefix.N.rest``, as {rest: value}, sorted by N as a number."""
    groups: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        match = _INDEX.match(key[len(head) :])
        if match:
            groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [groups[i] for i in sorted(groups)]


def _is_json(attrs: dict[str, Any]) -> bool:
    mime = attrs.get("input.mime_type")
    return mime in (None, "application/json")
