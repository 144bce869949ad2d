"""An answer as QA benchmarks compare them: no speaker label, lower case,
no thousands separators, punctuation or articles."""

from __future__ import annotations

import re
import string
import unicodedata

from ..text import normalise_text

# A role label a strategy or model puts before the answer: "[assistant] ...",
# "Assistant: ...", "**assistant:** ...".
_SPEAKER = re.compile(
    r"^\s*(?:\[\s*(?:assistant|user|system|tool|ai|bot|model)\b[^\]]*\]\s*:?"
    r"|\**(?:assistant|user|system|ai|bot|model)\s*:\**)\s*",
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalise_answer(text: str) -> str:
    """An answer as QA benchmarks compare them (SQuAD, LoCoMo): no speaker
    label, lower case, thousands separators, punctuation and articles gone,
    single spaces."""
    while (label := _SPEAKER.match(text)) and label.end() > 0:
        text = text[label.end() :]
    lowered = normalise_text(text)
    # Deleted, not replaced by a space, as SQuAD does: "5433." = "5433", "don't" = "dont".
    no_punctuation = "".join(c for c in lowered if not _is_punctuation(c))
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def _is_punctuation(char: str) -> bool:
    return char in string.punctuation or unicodedata.category(char).startswith("P")
