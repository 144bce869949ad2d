"""What a strategy did to the session: its window at a probe, each part marked.

The window's messages are matched against the session's own messages (the
system prompt, every message of every chat, then the probe question):

- ``kept``: an original message, unchanged;
- ``shortened``: an original message cut; when ``headtail`` moved its middle
  to memory, the part names the memory ids its marker gives;
- ``pruned``: a tool output replaced (pruned, answered by a sub-agent, masked,
  cut to fit a budget);
- ``summary``: text the strategy wrote (a summary, a working memory, retrieved
  excerpts, a system prompt it rebuilt: ``from`` names the message it started from;
  ``headtail``'s memory index message: ``memory`` names the ids it lists);
- ``dropped``: a run of original messages absent from the window, placed where
  they would have been;
- ``tools``: the tool definitions sent with the window (``headtail``'s
  ``retrieve_memory``, whose description lists the memories with ``listing=tool``).

Messages are numbered as the docs number them: 1-based, the system prompt not
counted (it is message 0).  The trace is stored in every result record, so it
is bounded: texts are capped (a kept message's more tightly than the
strategy's own text), a long run of kept messages keeps the text of its first
and last few only (the middle becomes one ``kept`` part with ``from``, ``to``
and ``count``), and past a total the texts are cut short.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from ..messages import Message, content_text
from ..probe_session import ProbeSession, indexed, positions_of
from ..strategies.headtail import INDEX_INTRO
from ..textcap import cap_text

# A kept message is the session's own text: enough to recognise it.
KEPT_TEXT_CHARS = 240
# What the strategy changed or wrote is what the reader came for.
CHANGED_TEXT_CHARS = 2_000
CALL_CHARS = 200
# A run of kept messages shows this many at each end; the middle is folded.
KEPT_RUN_EDGE = 3
# Text kept per trace in all; parts past it keep a short start only.
TRACE_TEXT_CHARS = 40_000
SHORT_TEXT_CHARS = 120
# headtail's marker (strategies/headtail_listing.py MARKER): "[… N chars stored as memory m3; …]".
MEMORY_MARKER = re.compile(r"\[… [\d,]+ chars stored as memory (\S+?); call retrieve_memory")
# A line of headtail's memory listing (strategies/headtail_listing.py LISTING_LINE): "id=m3 | …".
LISTED_MEMORY = re.compile(r"^id=(\S+) \|", re.MULTILINE)
# A derived message shares at least this much of its start or end with its original.
MIN_SHARED_CHARS = 24
_START, _END = slice(None, MIN_SHARED_CHARS), slice(-MIN_SHARED_CHARS, None)

Part = dict[str, Any]


def window_trace(
    session: Sequence[Message],
    sent: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    *,
    message_tokens: Callable[[Message], int],
    tools_tokens: Callable[[list[dict[str, Any]]], int] = lambda tools: 0,
    tokens_key: str | None = None,
) -> list[Part]:
    """The parts of the window ``sent``, in order, with the dropped runs of
    ``session`` between them; the tool definitions first, when there are any.

    ``session`` is what the full context would send (the probe question last);
    ``message_tokens`` counts one message as the run counts it.  ``tokens_key``
    names that count (its model): a probe's history then has its running
    totals worked out once for all its probes, and a dropped run costs two
    look-ups, not a count per message."""
    system = 1 if session and session[0].get("role") == "system" else 0
    matcher = _Matcher(session)
    parts: list[Part] = []
    sources: list[int | None] = []  # per part: the original index it stands for
    # From the end: strategies keep the recent messages, and a repeated text
    # ("Of course.") is the copy just before the messages that follow it.
    for message in reversed(sent):
        index = matcher.exact(message)
        if index is not None:
            part = _part("kept", message, index - system + 1, message_tokens(message))
        elif _is_memory_index(message):
            # Not derived from any message: it must not claim one (its last
            # preview can end like an evicted message).
            part = _memory_index(message, message_tokens(message))
        else:
            index = matcher.derived(message)
            part = _changed(message, session, index, system, message_tokens)
        parts.append(part)
        sources.append(index if part["mark"] != "summary" else None)
    parts.reverse()
    sources.reverse()
    run_tokens = _run_tokens(session, message_tokens, tokens_key)
    parts = _with_dropped(parts, sources, matcher.unused(), system, run_tokens)
    parts = _fold_kept_runs(parts)
    if tools:
        text = "\n".join(_tool_line(tool) for tool in tools)
        tool_part: Part = {
            "mark": "tools",
            "role": "tools",
            "text": cap_text(text, CHANGED_TEXT_CHARS),
            "tokens": tools_tokens(list(tools)),
        }
        parts.insert(0, tool_part)
    return _within_total(parts)


class _Matcher:
    """Finds each window message's original, asked from the window's last
    message back: each match is sought before the previous one where possible."""

    def __init__(self, session: Sequence[Message]) -> None:
        self.session = session
        self.used: set[int] = set()
        self.cursor = len(session)
        self._where = positions_of(session, "window-trace", _key)
        self._candidates: _Candidates | None = None  # built at the first changed message

    def exact(self, message: Message) -> int | None:
        free = [i for i in self._where(_key(message)) if i not in self.used]
        if not free:
            return None
        before = [i for i in free if i < self.cursor]
        return self._take(before[-1] if before else free[-1])

    def derived(self, message: Message) -> int | None:
        """The original a changed message came from: the tool result with its
        call id, else the message of its role sharing the longest start or end
        (the first such, in session order)."""
        role = message.get("role")
        call_id = message.get("tool_call_id")
        if self._candidates is None:
            self._candidates = _Candidates(self.session)
        if role == "tool" and call_id:
            same_call = [i for i in self._candidates.with_call(call_id) if i not in self.used]
            if same_call:
                return self._take(same_call[0])
        text = content_text(message)
        best, best_shared = None, 0
        for i in self._candidates.of(str(role), text):
            if i in self.used:
                continue
            original = content_text(self.session[i])
            shared = _shared_ends(original, text)
            if shared > best_shared and (shared >= MIN_SHARED_CHARS or shared == len(original)):
                best, best_shared = i, shared
        return None if best is None else self._take(best)

    def unused(self) -> list[int]:
        return [i for i in range(len(self.session)) if i not in self.used]

    def _take(self, index: int) -> int:
        self.used.add(index)
        self.cursor = min(self.cursor, index)
        return index


class _Candidates:
    """Which session messages can be a changed message's original, found
    without reading every message for each: one that shares at least
    MIN_SHARED_CHARS of its start or end with the changed text has the same
    first or last MIN_SHARED_CHARS characters; a shorter one must share all
    of itself: it is the changed text's start or end.  The indexes are the
    probe history's, built once for all of its probes and strategies."""

    def __init__(self, session: Sequence[Message]) -> None:
        self._session = session
        self._calls = positions_of(session, "window-trace-calls", _call_key)
        self._starts = positions_of(session, "window-trace-starts", lambda m: _text_key(m, _START))
        self._ends = positions_of(session, "window-trace-ends", lambda m: _text_key(m, _END))
        self._short = positions_of(session, "window-trace-short", lambda m: _text_key(m, None))

    def with_call(self, call_id: Any) -> list[int]:
        """The messages whose tool call id is ``call_id``, in session order."""
        found = self._calls(str(call_id))  # by text: a call id need not be hashable
        return [i for i in found if self._session[i].get("tool_call_id") == call_id]

    def of(self, role: str, text: str) -> list[int]:
        """The messages of ``role`` that can share enough with ``text``, in session order."""
        found: list[int] = []
        for length in range(1, min(len(text), MIN_SHARED_CHARS - 1) + 1):
            found += self._short((role, text[:length]))
            found += self._short((role, text[-length:]))
        if len(text) >= MIN_SHARED_CHARS:
            found += self._starts((role, text[_START])) + self._ends((role, text[_END]))
        return sorted(set(found))


def _call_key(message: Message) -> str | None:
    call_id = message.get("tool_call_id")
    return None if call_id is None else str(call_id)


def _text_key(message: Message, part: slice | None) -> tuple[str, str] | None:
    """(role, ``part`` of the text) for a text of MIN_SHARED_CHARS or more;
    with no ``part``, (role, text) for a shorter one (an empty one is nobody's original)."""
    text = content_text(message)
    if not text or (len(text) >= MIN_SHARED_CHARS) != (part is not None):
        return None
    return str(message.get("role")), text[part] if part is not None else text


def _key(message: Message) -> tuple[str, ...]:
    calls = message.get("tool_calls")
    return (
        str(message.get("role")),
        content_text(message),
        json.dumps(calls, sort_keys=True) if calls else "",
        str(message.get("tool_call_id") or ""),
    )


def _shared_ends(original: str, text: str) -> int:
    """Characters the two texts share at the start, or at the end if more."""
    limit = min(len(original), len(text))
    start = 0
    while start < limit and original[start] == text[start]:
        start += 1
    end = 0
    while end < limit and original[-1 - end] == text[-1 - end]:
        end += 1
    return max(start, end)


def _changed(
    message: Message,
    session: Sequence[Message],
    index: int | None,
    system: int,
    message_tokens: Callable[[Message], int],
) -> Part:
    tokens = message_tokens(message)
    text = content_text(message)
    if index is None:
        return _part("summary", message, None, tokens)
    original = session[index]
    number = index - system + 1
    memories = MEMORY_MARKER.findall(text)
    if memories:
        mark = "shortened"
    elif message.get("role") == "tool":
        mark = "pruned"
    elif len(text) < len(content_text(original)):
        mark = "shortened"
    else:
        # Built on the original but longer: the strategy added text of its own.
        part = _part("summary", message, None, tokens)
        part["from"] = number
        return part
    part = _part(mark, message, number, tokens)
    part["original_tokens"] = message_tokens(original)
    if memories:
        part["memory"] = memories
    return part


def _is_memory_index(message: Message) -> bool:
    return message.get("role") == "user" and content_text(message).startswith(INDEX_INTRO)


def _memory_index(message: Message, tokens: int) -> Part:
    """headtail's listing sent as a message: text it wrote, naming the memories it lists."""
    part = _part("summary", message, None, tokens)
    listed = LISTED_MEMORY.findall(content_text(message))
    if listed:
        part["memory"] = listed
    return part


def _part(mark: str, message: Message, number: int | None, tokens: int) -> Part:
    limit = KEPT_TEXT_CHARS if mark == "kept" else CHANGED_TEXT_CHARS
    part: Part = {"mark": mark, "role": str(message.get("role"))}
    if number is not None:
        part["n"] = number
    part["text"] = cap_text(content_text(message), limit)
    part["tokens"] = tokens
    calls = [_call_text(call) for call in message.get("tool_calls") or []]
    if calls:
        part["calls"] = calls
    return part


def _call_text(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return cap_text(str(call), CALL_CHARS)
    return cap_text(f"{function.get('name')}({function.get('arguments') or ''})", CALL_CHARS)


def _tool_line(tool: dict[str, Any]) -> str:
    function = tool.get("function", tool)
    if not isinstance(function, dict):
        return str(tool)
    return f"{function.get('name')}: {function.get('description') or ''}"


def _run_tokens(
    session: Sequence[Message], message_tokens: Callable[[Message], int], key: str | None
) -> Callable[[int, int], int]:
    """Tokens of ``session[first : last + 1]``."""
    if key is None or not isinstance(session, ProbeSession):
        return lambda first, last: sum(message_tokens(session[i]) for i in range(first, last + 1))
    history = session.history
    totals = indexed(
        history, f"tokens:{key}", lambda h: list(accumulate(map(message_tokens, h), initial=0))
    )

    def tokens(first: int, last: int) -> int:
        end = min(last + 1, len(history))
        found = totals[end] - totals[first] if first < end else 0
        return found + (message_tokens(session.current) if last >= len(history) else 0)

    return tokens


def _with_dropped(
    parts: list[Part],
    sources: list[int | None],
    unused: list[int],
    system: int,
    run_tokens: Callable[[int, int], int],
) -> list[Part]:
    """``parts`` with each run of unused originals placed before the first part
    that stands for a later original (at the end if none does)."""
    runs: list[list[int]] = []
    for index in unused:
        if runs and runs[-1][-1] == index - 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    out: list[Part] = []
    pending = deque(runs)
    for part, source in zip(parts, sources, strict=True):
        while pending and source is not None and pending[0][0] < source:
            out.append(_dropped(pending.popleft(), system, run_tokens))
        out.append(part)
    out.extend(_dropped(run, system, run_tokens) for run in pending)
    return out


def _dropped(run: list[int], system: int, run_tokens: Callable[[int, int], int]) -> Part:
    return {
        "mark": "dropped",
        "from": run[0] - system + 1,
        "to": run[-1] - system + 1,
        "count": len(run),
        "tokens": run_tokens(run[0], run[-1]),
    }


def _fold_kept_runs(parts: list[Part]) -> list[Part]:
    """Each run of kept messages longer than twice ``KEPT_RUN_EDGE`` (not
    counting the probe question, always last and always shown) with its
    middle folded into one part without text."""
    out: list[Part] = []
    run: list[Part] = []
    body, last = parts[:-1], parts[-1:]
    for part in [*body, {"mark": "end"}]:
        if part["mark"] == "kept":
            run.append(part)
            continue
        if len(run) > 2 * KEPT_RUN_EDGE + 1:
            middle = run[KEPT_RUN_EDGE:-KEPT_RUN_EDGE]
            folded: Part = {
                "mark": "kept",
                "from": middle[0].get("n"),
                "to": middle[-1].get("n"),
                "count": len(middle),
                "tokens": sum(p["tokens"] for p in middle),
            }
            run = [*run[:KEPT_RUN_EDGE], folded, *run[-KEPT_RUN_EDGE:]]
        out.extend(run)
        run = []
        if part["mark"] != "end":
            out.append(part)
    return out + last


def _within_total(parts: list[Part]) -> list[Part]:
    """Parts past ``TRACE_TEXT_CHARS`` of text keep only a short start of theirs."""
    used = 0
    for part in parts:
        text = part.get("text")
        if text is None:
            continue
        if used >= TRACE_TEXT_CHARS:
            part["text"] = cap_text(text, SHORT_TEXT_CHARS)
        used += len(part["text"])
    return parts
