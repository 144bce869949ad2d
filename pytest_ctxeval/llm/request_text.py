"""Every text a request shows the model: message content, the string values
of tool-call arguments, and tool definitions.

A fact that lives only in a tool call's arguments (``write_file`` with
``STAGING_PORT = 5433``) or in a tool's description (a memory preview) is in
the context all the same; the mock model and fact survival read it here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..messages import Message, content_text


def argument_strings(arguments: Any) -> list[str]:
    """The string values inside a tool call's arguments, in order.

    Arguments normally arrive as a JSON string: parsed, then walked.  A string
    that is not JSON is itself what the model sent, so it is kept whole."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return [arguments] if arguments.strip() else []
        if isinstance(parsed, str):
            return [parsed] if parsed.strip() else []
        arguments = parsed
    return [s for s in _strings(arguments) if s.strip()]


def tool_call_texts(message: Message) -> list[str]:
    """The argument strings of every tool call an assistant message makes."""
    texts: list[str] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            texts.extend(argument_strings(function.get("arguments")))
    return texts


def message_texts(message: Message) -> list[str]:
    """The content of a message, then its tool-call argument strings."""
    text = content_text(message)
    return ([text] if text else []) + tool_call_texts(message)


def tool_texts(tool: dict[str, Any]) -> list[str]:
    """What a tool definition tells the model: its name, its description and
    the descriptions (and allowed values) of its parameters."""
    function = tool.get("function", tool)
    if not isinstance(function, dict):
        return []
    texts = [
        str(function[key]) for key in ("name", "description") if isinstance(function.get(key), str)
    ]
    texts.extend(_schema_texts(function.get("parameters")))
    return [t for t in texts if t.strip()]


def tools_texts(tools: list[dict[str, Any]] | None) -> list[str]:
    return [text for tool in tools or [] for text in tool_texts(tool)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _schema_texts(schema: Any) -> Iterator[str]:
    """Descriptions and enum values anywhere in a JSON schema (property names
    are identifiers, not prose)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                yield value
            elif key == "enum" and isinstance(value, list):
                yield from (v for v in value if isinstance(v, str))
            else:
                yield from _schema_texts(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _schema_texts(item)


def last_index(messages: list[dict[str, Any]], role: str) -> int | None:
    """Where the last message of ``role`` is (the question: the last user message)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == role:
            return i
    return None
