"""OpenAI-style chat messages: the one data shape every layer shares."""

from __future__ import annotations

import operator
from collections.abc import Sequence
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


def identical_prefix_length(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """How many leading items of two lists are the very same objects: one
    pass in C, however far the lists agree (a Python loop over a long shared
    prefix would cost every request of a session its whole window)."""
    if all(map(operator.is_, previous, current)):  # the usual case, and the quickest check
        return min(len(previous), len(current))
    return list(map(operator.is_, previous, current)).index(False)
