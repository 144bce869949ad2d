"""Context hygiene for ``headtail``: what a window can leave out without losing anything.

- A **repeated tool call** (same function name, same arguments) makes the
  earlier call and its result stale: once the new call is answered, the
  earlier call leaves its assistant message (the message goes when nothing
  else is left of it) and its result leaves the window.  The newest result
  is the one that counts: a file read again after an edit.
- A **repeated message** (same role, same text, no tool calls) adds nothing:
  the later copy is left out, so the earlier part of the window, and the
  provider's prompt cache of it, stay as they were.

Tracked as messages arrive, so a window never rescans the history.  The
system prompt and the current message are never left out (the caller keeps
the current message in whatever the hygiene says).
"""

from __future__ import annotations

import json
from typing import Any

from .base import Message, content_text


class Hygiene:
    """Which history indices a window leaves out, and which messages lose calls."""

    def __init__(self) -> None:
        self.hidden: set[int] = set()  # history indices the window leaves out
        # Assistant messages that keep some of their calls (or only their text).
        self.trimmed: dict[int, Message] = {}
        self._callers: dict[int, Message] = {}  # index -> an assistant message with calls
        self._calls: dict[str, tuple[int, tuple[str, str]]] = {}  # call id -> (caller, key)
        # (name, arguments) -> the caller, call id and result of its latest answer.
        self._answered: dict[tuple[str, str], tuple[int, str, int]] = {}
        self._texts: set[tuple[str, str]] = set()
        # Earlier messages whose showing changed (left out, or trimmed of a
        # call), in order: a window built before holds them as they were.
        self.touched: list[int] = []

    def add(self, index: int, message: Message) -> None:
        role = str(message.get("role"))
        calls = message.get("tool_calls") or []
        if calls:
            self._callers[index] = message
        for call in calls:
            function = call.get("function") or {}
            key = (str(function.get("name", "")), _arguments(function.get("arguments")))
            self._calls[str(call.get("id"))] = (index, key)
        if role == "tool":
            self._answer(index, message)
        elif role in ("user", "assistant") and not calls:
            text = (role, content_text(message))
            if text in self._texts and text[1].strip():
                self.hidden.add(index)  # the new message: no earlier window changes
            self._texts.add(text)

    def shown(self, index: int, message: Message) -> Message | None:
        """``message`` as the window shows it; None when it is left out."""
        if index in self.hidden:
            return None
        return self.trimmed.get(index, message)

    def _answer(self, index: int, result: Message) -> None:
        call_id = str(result.get("tool_call_id"))
        found = self._calls.get(call_id)
        if found is None:
            return
        caller, key = found
        earlier = self._answered.get(key)
        self._answered[key] = (caller, call_id, index)
        if earlier is None or earlier[0] == caller:
            return  # a first answer, or one message making the same call twice
        earlier_caller, earlier_id, earlier_result = earlier
        self.hidden.add(earlier_result)
        self.touched += (earlier_result, earlier_caller)
        self._drop_call(earlier_caller, earlier_id)

    def _drop_call(self, caller: int, call_id: str) -> None:
        message = self.trimmed.get(caller, self._callers[caller])
        kept = [c for c in message.get("tool_calls") or [] if str(c.get("id")) != call_id]
        if kept:
            self.trimmed[caller] = {**message, "tool_calls": kept}
        elif content_text(message).strip():
            self.trimmed[caller] = {k: v for k, v in message.items() if k != "tool_calls"}
        else:
            self.hidden.add(caller)  # nothing left of it


def _arguments(arguments: Any) -> str:
    """Arguments as a key: parsed JSON in sorted keys, so spacing and key order
    do not make two equal calls look different."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return str(arguments)
    return json.dumps(arguments, sort_keys=True, default=str)
