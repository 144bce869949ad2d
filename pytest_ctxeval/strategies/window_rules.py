"""The rules every window must keep, checked against what the strategy was given.

The harness checks each probe window with :func:`window_violations`, so a
strategy that corrupts its window gets an error instead of a misleading
classification; the invariant suite checks the same rules at every model call.

- ``current-message``: the current message is the window's last message.  A
  current user message goes in unaltered (equal dicts); a current tool result
  answers the same call (its content may be condensed).
- ``system-prompt``: the window's first message is a system message whose text
  *begins with* the session's system prompt, byte for byte.  A strategy may add
  text after the prompt (``compaction`` folds its working memory in there, an
  agent may append the date), but never drop it, rewrite it, insert text into
  it or put anything before it: the prompt's opening is where models and
  prompt caches look first.  Skipped only when the strategy was explicitly
  configured with ``keep_system=False`` (see :func:`keeps_system_prompt`).
- ``order``: messages the window keeps unchanged from the session appear in
  session order.
- ``tool-pairs``: every tool result comes right after the assistant message
  that made its call (or after sibling results of the same message), and every
  call has its result.  A strategy is only blamed for pairs it broke: a call
  the session itself has not answered yet (the current exchange, a dangling
  call) or pairs the session itself mangles are not the window's fault.

Cheap enough for every probe window: linear in the window and the session,
messages matched by a hashable key and then compared, never serialised or
copied.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from ..probe_session import ProbeSession, indexed, positions_of
from .base import Message, Window, content_text, tool_call_ids

RULES = ("current-message", "system-prompt", "order", "tool-pairs")


def window_violations(
    session: Sequence[Message], window: Window, *, keep_system: bool = True
) -> list[str]:
    """Every broken rule, as ``"rule: detail"``; empty when the window is sound.

    ``session``: exactly the messages the strategy was given so far, the
    system prompt first (if any) and the current message last.  ``keep_system``:
    False only for a strategy configured to drop the system prompt."""
    shown = window.messages
    found = _current_message(session, shown)
    if keep_system:
        found += _system_prompt(session, shown)
    found += _order(session, shown)
    found += _tool_pairs(session, shown)
    return found


def keeps_system_prompt(params: Mapping[str, Any]) -> bool:
    """Whether a strategy built with ``params`` must keep the system prompt.

    Only an explicit ``keep_system=False`` (``include_system=False``) exempts it (a wrapper's
    ``inner_params`` count as its own); a class cannot exempt itself."""
    if "keep_system" in params:
        return bool(params["keep_system"])
    if "include_system" in params:  # LangChain's name for it (``langchain-trim``)
        return bool(params["include_system"])
    inner = params.get("inner_params")
    return keeps_system_prompt(inner) if isinstance(inner, Mapping) else True


def _current_message(session: Sequence[Message], shown: list[Message]) -> list[str]:
    if not session:
        return []
    current = session[-1]
    role = current.get("role")
    last = shown[-1] if shown else None
    if role == "tool":
        call = current.get("tool_call_id")
        if last is None or last.get("role") != "tool" or last.get("tool_call_id") != call:
            return [
                f"current-message: the current tool result {call} is not the window's last message"
            ]
        return []
    if last == current:
        return []
    if last is not None and last.get("role") == role and current not in shown:
        return [
            f"current-message: the current {role} message was altered; it must be the "
            "window's last message, unaltered"
        ]
    return [f"current-message: the current {role} message is not the window's last message"]


def _system_prompt(session: Sequence[Message], shown: list[Message]) -> list[str]:
    if not session or session[0].get("role") != "system":
        return []
    head = shown[0] if shown else {}
    if head.get("role") != "system":
        return ["system-prompt: the window does not start with the system prompt"]
    if not content_text(head).startswith(content_text(session[0])):
        return [
            "system-prompt: the window's system message does not begin with the system "
            "prompt, unaltered (text may only be added after it)"
        ]
    return []


def _key(message: Message) -> tuple[Any, ...]:
    # Hashable and cheap (a str's hash is cached); equal messages have equal keys.
    return (
        message.get("role"),
        content_text(message),
        message.get("tool_call_id"),
        tuple(tool_call_ids(message)),
    )


def _order(session: Sequence[Message], shown: list[Message]) -> list[str]:
    where = positions_of(session, "window-rules", _key)
    previous = -1  # session index of the last window message matched
    previous_shown = -1
    for position, message in enumerate(shown):
        candidates = where(_key(message))
        if not candidates:
            continue  # new or altered: nothing to order it by
        # The earliest equal session message after the previous match: greedy
        # matching keeps any valid order of repeated messages valid.
        later = bisect_right(candidates, previous)
        match = next((i for i in candidates[later:] if session[i] == message), None)
        if match is not None:
            previous, previous_shown = match, position
            continue
        earlier = next((i for i in candidates[:later] if session[i] == message), None)
        if earlier == previous:
            return [
                f"order: window message {position + 1} ({message.get('role')}) repeats "
                f"session message {earlier + 1} (window message {previous_shown + 1})"
            ]
        if earlier is not None:
            return [
                f"order: window message {position + 1} ({message.get('role')}) is session "
                f"message {earlier + 1}, but it comes after window message {previous_shown + 1}, "
                f"which is session message {previous + 1}"
            ]
    return []


def _tool_pairs(session: Sequence[Message], shown: list[Message]) -> list[str]:
    # What the session itself leaves unpaired cannot be the window's fault.
    # A probe's question (a user message without calls) pairs nothing: its
    # history's problems are the session's, worked out once for all probes.
    current = session[-1] if session else None
    if isinstance(session, ProbeSession) and current is not None and _pairs_nothing(current):
        excused = indexed(session.history, "tool-pairs", _unpaired_calls)
    else:
        excused = _unpaired_calls(session)
    return [
        f"tool-pairs: {problem}" for call, problem in _pair_problems(shown) if call not in excused
    ]


def _unpaired_calls(messages: Sequence[Message]) -> set[str]:
    return {call for call, _ in _pair_problems(messages)}


def _pairs_nothing(message: Message) -> bool:
    return message.get("role") == "user" and not tool_call_ids(message)


def _pair_problems(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """(call id, problem) for every tool result not right after its call, and
    every call without its result."""
    called = {call for message in messages for call in tool_call_ids(message)}
    results = {str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"}
    problems: list[tuple[str, str]] = []
    answered: set[str] = set()
    awaiting: list[str] = []  # calls of the message just before this run of results

    def close() -> None:
        for call in awaiting:
            # A result elsewhere in the window is reported where it stands.
            if call not in answered and call not in results:
                problems.append((call, f"tool call {call} without its result"))

    for message in messages:
        if message.get("role") != "tool":
            close()
            awaiting = tool_call_ids(message)
            continue
        call = str(message.get("tool_call_id"))
        if call in awaiting and call not in answered:
            answered.add(call)
        elif call in answered:
            problems.append((call, f"tool result {call} appears twice"))
        elif call in called:
            detail = "is not right after the assistant message that made the call"
            problems.append((call, f"tool result {call} {detail}"))
        else:
            problems.append((call, f"tool result {call} without its call"))
    close()
    return problems
