"""The cache-breaker detector's reasons: why a request stopped extending the
one before (``PromptCache`` finds the first block that differs)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..messages import content_text
from .prefix_list import PrefixList

Message = dict[str, Any]

BREAK_REASONS = (
    "timestamp",  # only a date or time differs (e.g. "Current time: ..." in the system prompt)
    "whitespace",  # only whitespace differs
    "key_order",  # the same message with its JSON keys in another order
    "tool_key_order",  # the same tool definitions with JSON keys in another order
    "tool_changed",  # a tool definition added, removed or changed
    "message_removed",  # an earlier message left the window (evicted)
    "message_inserted",  # a message put before earlier ones (e.g. retrieved notes)
    "message_edited",  # an earlier message rewritten (summarised, pruned, cut)
)
# A date or time change touches at most this many characters, and reads as
# one with this many characters of context either side.
TIME_LENGTH_SLACK = 40
TIME_CONTEXT = 32
# ISO dates, clock times, weekday/month names, Unix times: what a clock line holds.
_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b"
    r"|\b1\d{9}(?:\.\d+)?\b"
    r"|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\b"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b"
)


def message_reason(
    before_messages: Sequence[Message],
    before_digests: PrefixList[bytes],
    after_messages: Sequence[Message],
    after_digests: PrefixList[bytes],
    index: int,
) -> str:
    """Why message ``index`` of the earlier request is not where it was
    (each request: its messages and their digests)."""
    if index >= len(after_messages):
        return "message_removed"
    before, after = before_messages[index], after_messages[index]
    if before == after:  # equal as dicts, different bytes: keys in another order
        return "key_order"
    if before.get("role") == after.get("role"):
        old, new = content_text(before), content_text(after)
        start = _common_prefix(old, new)
        if _only_whitespace_differs(old, new, start):
            return "whitespace"
        if _only_time_differs(old, new, start):
            return "timestamp"
    if before_digests[index] in set(after_digests.iter_from(index + 1)):
        return "message_inserted"  # the earlier message is still there, further on
    if after_digests[index] in set(before_digests.iter_from(index + 1)):
        return "message_removed"  # the window goes on with a message that came after it
    return "message_edited"


def _only_whitespace_differs(old: str, new: str, at: int) -> bool:
    """Whether the texts are the same but for whitespace (``at``: the length
    of their common start).  Where they first differ, one of the two
    characters is whitespace, or the texts' words differ there: that look
    settles most edits (a listing that gained a line, a rewritten summary)
    without splitting both texts."""
    if at < len(old) and at < len(new) and not old[at].isspace() and not new[at].isspace():
        return False
    return "".join(old.split()) == "".join(new.split())


def _only_time_differs(old: str, new: str, start: int) -> bool:
    """Whether the texts differ only in a date or time (``start``: the length
    of their common start): one short stretch that, with some context either
    side, reads the same without its times."""
    end = _common_prefix(old[start:][::-1], new[start:][::-1])
    if max(len(old), len(new)) - start - end > TIME_LENGTH_SLACK:
        return False
    low = max(start - TIME_CONTEXT, 0)
    old_part = old[low : len(old) - end + TIME_CONTEXT]
    new_part = new[low : len(new) - end + TIME_CONTEXT]
    return _TIME.sub("", old_part) == _TIME.sub("", new_part)


def _common_prefix(a: str, b: str) -> int:
    """Length of the common start, by halving (slice comparisons run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
