"""Caps on untrusted text (model answers, server error bodies) with a visible marker.

``cap_text(text, limit)`` keeps the first ``limit`` characters and appends
``… [truncated: 200,000 chars]``, naming the length of the whole.  Capping is
idempotent, so a text capped once (say, in a cassette) is left alone when
capped again on replay: text up to ``limit + SLACK`` characters is kept
whole, and a capped text is never longer than that.  Capping a capped text
to a smaller limit names the original length, not the intermediate one.
"""

from __future__ import annotations

import re
from typing import overload

# Room for the marker: a capped text is at most limit + len(marker) long.
SLACK = 64
_MARKER = re.compile(r"\n?… \[truncated: ([\d,]+) chars\]\Z")
# The marker is short: only a text's tail can hold it (searching a long
# tool output whole for it was a full scan per capping).
_MARKER_TAIL = 128


def marker(original_chars: int) -> str:
    return f"\n… [truncated: {original_chars:,} chars]"


@overload
def cap_text(text: str, limit: int) -> str: ...
@overload
def cap_text(text: None, limit: int) -> None: ...
def cap_text(text: str | None, limit: int) -> str | None:
    """``text`` whole if it is at most ``limit + SLACK`` characters long, else
    its first ``limit`` characters and a marker naming the original length."""
    if text is None or len(text) <= limit + SLACK:
        return text
    return text[:limit] + marker(original_length(text))


def original_length(text: str) -> int:
    """The length a capped text had before capping; ``len(text)`` if it was never capped."""
    found = _MARKER.search(text, max(len(text) - _MARKER_TAIL, 0))
    if found is None:
        return len(text)
    return max(int(found.group(1).replace(",", "")), len(text))


_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_problem(text: str) -> str | None:
    """What is wrong with ``text`` if it holds a lone surrogate (what a
    ``\\ud800`` escape in JSON or YAML makes: not a character, and no UTF-8
    file can hold it), e.g. "a lone surrogate U+D800 at character 5"; None
    when it is valid Unicode."""
    if text.isascii():  # known without a scan: Python marks ASCII strings as such
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"a lone surrogate U+{ord(found.group()):04X} at character {found.start() + 1:,}"
