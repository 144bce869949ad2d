"""An exception as one line a user can act on: litellm's wrapper prefixes,
terminal colours and the documentation links it appends are removed (they
point at litellm's docs, not at what the user of this tool should do)."""

from __future__ import annotations

import re

# litellm nests its wrappers: "litellm.XError: litellm.YError: XError: OpenAIException - msg".
_WRAPPER_PREFIX = re.compile(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)(?::| -) )+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_URL = r"<?https?://[^\s)>\]]+>?"
# A link with the words that introduce it: "Learn more: URL", "(see URL)".
_INTRODUCED_URL = re.compile(
    r"\s*[(\[]?\s*(?:learn more|more info(?:rmation)?|see|docs?|documentation|"
    r"(?:give feedback\s*/\s*)?get help|add it here|relevant issue)\s*(?:at|:|-)?\s*"
    + _URL
    + r"\s*[)\]]?",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MAX_CHARS = 300


def error_line(error: BaseException | str) -> str:
    """The first line of an error without library links, at most MAX_CHARS long."""
    text = _ANSI.sub("", str(error)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    # litellm may run a traceback into the same line ("Invalid response object Traceback ...").
    line = _WRAPPER_PREFIX.sub("", lines[0]).split(" Traceback (most recent call last)")[0]
    return without_urls(line)[:MAX_CHARS]


def without_urls(text: str) -> str:
    text = _INTRODUCED_URL.sub("", text)
    # "You can find your API key at URL.": a sentence built around a link
    # means nothing without it; drop it, unless it is all there is.
    sentences = [s for s in _SENTENCE_END.split(text) if s]
    kept = [s for s in sentences if "://" not in s]
    text = " ".join(kept) if kept else re.sub(_URL, "", text)
    # Only the end: a leading "--option" is part of the message.
    return re.sub(r"\s{2,}", " ", text).strip().rstrip(" -:")
