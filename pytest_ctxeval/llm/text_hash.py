"""Hashing text-only chat messages without writing them as JSON first.

Most messages of a session are a dict of strings (role, content, a name or a
tool call id, maybe a None).  Escaping a long tool output into JSON only to
hash it costs three times the hash itself, so such a message is hashed from
its items: each key and value UTF-8 encoded behind its length (a None value
has length -1), which tells apart every two lists of items JSON would tell
apart.  Other messages (content parts, tool calls) are hashed from their
JSON, behind a different tag, so the two kinds never meet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Protocol

TEXT_ONLY_TAG = b"text-only items\0"
JSON_TAG = b"json\0"


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...


def text_only_items(message: Any) -> tuple[tuple[str, str | None], ...] | None:
    """The items of ``message`` when every key is a string and every value a
    string or None, in their order; None otherwise."""
    if not isinstance(message, dict):
        return None
    items = tuple(message.items())
    for key, value in items:
        if type(key) is not str or (value is not None and type(value) is not str):
            return None
    return items


def hash_items(hasher: Hasher, items: Iterable[tuple[str, str | None]]) -> None:
    """Feed text-only items to ``hasher``, in the order given."""
    hasher.update(TEXT_ONLY_TAG)
    for key, value in items:
        # surrogatepass: a lone surrogate in a text hashes instead of raising.
        name = key.encode("utf-8", "surrogatepass")
        text = b"" if value is None else value.encode("utf-8", "surrogatepass")
        size = -1 if value is None else len(text)
        hasher.update(b"%d:%d:" % (len(name), size))
        hasher.update(name)
        hasher.update(text)


def items_digest(items: Iterable[tuple[str, str | None]], size: int = 16) -> bytes:
    """The blake2b digest (``size`` bytes) of text-only items, in the order given."""
    hasher = hashlib.blake2b(digest_size=size)
    hash_items(hasher, items)
    return hasher.digest()
