"""OpenAI-style chat messages: the one data shape every layer shares."""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]


def content_text(message: Message) -> str:
    """The text of a message; OpenAI content parts are joined."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))
