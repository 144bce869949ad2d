"""What a strategy sent, as it was when it was sent.

The session's meters (prompt tokens, the prompt cache, the ledger) reuse
their work for the leading messages a window shares, by identity, with the
one before, and remember each message object's tokens: a long session then
costs its new text only.  That holds only while a sent message never
changes.  A strategy may edit the messages it keeps in place (it is given
copies of the session's, so that is safe), and its next window then holds
the very objects of the last one with other text in them.  For such a
strategy the meters are handed the harness's own copies instead: a message
that is the same object *and* still equal to its copy keeps that copy;
anything else is copied afresh.  So equal content means equal figures,
whether a strategy edits in place or copies.
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field, replace
from typing import Any

from ..messages import identical_prefix_length
from ..strategies.base import Message, Window, copy_message


@dataclass
class SentCopies:
    """Feed every window a strategy sends, in order, to ``freeze``."""

    _live: list[Message] = field(default_factory=list)  # the last window as sent
    _sent: list[Message] = field(default_factory=list)  # and its copies
    # id of a message sent before -> (that message, its copy); holding the
    # message keeps its id from being reused.
    _copies: dict[int, tuple[Message, Message]] = field(default_factory=dict)
    _tools: list[dict[str, Any]] | None = None  # the copy of the last tools sent

    def freeze(self, window: Window) -> Window:
        """``window`` with the copies of its messages and tools."""
        return replace(
            window, messages=self._messages(window.messages), tools=self._tool_list(window.tools)
        )

    def _messages(self, messages: list[Message]) -> list[Message]:
        live, sent = self._live, self._sent
        # The usual case, in C: the previous window's objects, still equal to their copies.
        same = identical_prefix_length(live, messages)
        unchanged = list(map(operator.eq, sent[:same], messages[:same]))
        if not all(unchanged):
            same = unchanged.index(False)
        out = sent[:same]
        copies = self._copies
        for message in messages[same:]:
            known = copies.get(id(message))
            if known is None or known[0] is not message or known[1] != message:
                known = (message, copy_message(message))
                copies[id(message)] = known
            out.append(known[1])
        self._live, self._sent = list(messages), out
        return out

    def _tool_list(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Tools rarely change: equal tools keep the copy, whatever list holds them.
        if self._tools is None or self._tools != tools:
            self._tools = copy.deepcopy(tools) if tools else []
        return self._tools
