"""OpenAI-style chat messages: the one data shape every layer shares."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence
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
    return _first_not_identical(previous, current)


def identical_after_first(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """How many items after the first of two lists are the very same objects:
    a window whose first message alone was rewritten (a clock in the system
    prompt) still holds the previous window's messages after it."""
    rest = itertools.islice(previous, 1, None), itertools.islice(current, 1, None)
    if all(map(operator.is_, *rest)):
        return max(min(len(previous), len(current)) - 1, 0)
    return _first_not_identical(
        *(itertools.islice(items, 1, None) for items in (previous, current))
    )


def kept_after_new_first(
    previous: Sequence[Any], current: Sequence[Any], identical: int, after_first: int | None
) -> int:
    """When ``current`` starts with none of ``previous``'s objects
    (``identical`` is 0) but holds them after its first item: 1 + how many
    (``after_first`` when the caller knows it); otherwise 0."""
    if identical or not previous or not current:
        return 0
    if after_first is None:
        after_first = identical_after_first(previous, current)
    return 1 + after_first if after_first else 0


def _first_not_identical(previous: Iterable[Any], current: Iterable[Any]) -> int:
    """The index of the first pair that are not the same object, found in C
    without building a list as long as the window (there is one such pair)."""
    return next(itertools.compress(itertools.count(), map(operator.is_not, previous, current)))
