"""A request cut into blocks: the tool definitions, then one block per
message, each hashed as the provider sees it (keys in the order they were
given: a reordered key is a different prompt; a text-only message from its
items, any other from its JSON, see ``text_hash``), with a prefix hash and
the prefix's tokens at every block boundary.

The hash after the first message chains the tools and that message; past
it, hashes chain the tools and the messages after the first, and a prefix is
the pair (the first message's hash, its own): so a request whose first
message alone is new (a clock in the system prompt) keeps every hash after
it.  A message object seen before is never serialised again, and the
messages a request shares (by identity) with the previous one, leading or
after a new first message, reuse its hashes: the work grows with the
session's new text, not with requests x window.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import identical_prefix_length, kept_after_new_first
from .prefix_list import PrefixList
from .text_hash import JSON_TAG, items_digest, text_only_items

Message = dict[str, Any]
Tools = Sequence[dict[str, Any]]


@dataclass
class CutRequest:
    """One request cut into blocks: its prefix hashes and tokens at each boundary."""

    tools: Tools
    tools_key: bytes
    # PrefixLists: a request shares the items of the one before.
    messages: PrefixList[Message]
    digests: PrefixList[bytes]  # per message
    # Boundary i: 0 the tools, 1 the tools and the first message, from 2 on
    # the tools and messages[1:i] (with hashes[1], see ``prefix_key``);
    # len(messages) + 1 entries.
    hashes: PrefixList[bytes]
    tokens: PrefixList[int]  # tokens of the prefix at boundary i, less ``first_shift`` from 1 on
    prompt_tokens: int
    # Leading messages that are the very objects the previous request sent,
    # and, when none is, how many after the first message are.
    shared: int = 0
    after_first: int = 0
    # How far the first message's tokens moved since ``tokens`` were counted.
    first_shift: int = 0

    def tokens_at(self, boundary: int) -> int:
        return self.tokens[boundary] + (self.first_shift if boundary else 0)


@dataclass
class BlockCutter:
    """Cuts a session's requests, remembering each message's block."""

    message_tokens: Callable[[Message], int]
    tools_tokens: Callable[[Tools], int]
    request_overhead: int = 0
    _message_memo: dict[int, tuple[Message, bytes, int]] = field(default_factory=dict)
    _tools_memo: dict[int, tuple[Tools, bytes, bytes, int]] = field(default_factory=dict)
    # (digest, tokens) of plain text messages by their items: a copy of a
    # message (a forked strategy's history) is not hashed again.  Shared
    # with forks: what it holds follows from the items alone.
    _plain_memo: dict[tuple[tuple[str, str | None], ...], tuple[bytes, int]] = field(
        default_factory=dict
    )

    def fork(self) -> BlockCutter:
        return dataclasses.replace(
            self, _message_memo=dict(self._message_memo), _tools_memo=dict(self._tools_memo)
        )

    def cut(
        self,
        previous: CutRequest | None,
        messages: Sequence[Message],
        tools: Tools,
        identical: int | None = None,
        after_first: int | None = None,
        *,
        extend: bool = False,
    ) -> CutRequest:
        """``extend``: a request that only adds messages to the previous one
        may take over its lists and append to them (the previous request is
        not needed any more).  Otherwise it shares the previous one's items
        that it repeats: the leading ones, or all but a new first message.
        Either way it costs its new messages only."""
        tools_key, tools_hash, tool_tokens = self._tools_block(tools)
        shift = 0
        if previous is None or previous.tools_key != tools_key:
            shared = kept = 0
            sent: PrefixList[Message] = PrefixList()
            digests: PrefixList[bytes] = PrefixList()
            hashes, tokens = PrefixList([tools_hash]), PrefixList([tool_tokens])
        else:
            if identical is None:
                identical = identical_prefix_length(previous.messages, messages)
            shared = identical
            kept = kept_after_new_first(previous.messages, messages, shared, after_first) or shared
            if kept > shared:  # a new first message: the rest keeps its blocks
                first = messages[0]
                digest, count = self.message_block(first)
                shift = previous.first_shift + count - (previous.tokens_at(1) - tool_tokens)
                sent = previous.messages.prefix(kept).replaced(0, first)
                digests = previous.digests.prefix(kept).replaced(0, digest)
                hashes = previous.hashes.prefix(kept + 1).replaced(1, chain(tools_hash, digest))
                tokens = previous.tokens.prefix(kept + 1)
            elif extend and shared == len(previous.messages):
                sent, digests, hashes = previous.messages, previous.digests, previous.hashes
                tokens, shift = previous.tokens, previous.first_shift
            else:
                sent, digests = previous.messages.prefix(shared), previous.digests.prefix(shared)
                hashes, tokens = (
                    previous.hashes.prefix(shared + 1),
                    previous.tokens.prefix(shared + 1),
                )
                shift = previous.first_shift if shared else 0
        new = messages[kept:]
        sent.extend(new)
        last_hash, last_tokens = hashes[-1], tokens[-1]
        # Gathered in plain lists, then added a chunk at a time.
        new_digests, new_hashes, new_tokens = [], [], []
        for index, message in enumerate(new, kept):
            digest, count = self.message_block(message)
            # Past the first message the chain starts again from the tools.
            last_hash = chain(tools_hash if index == 1 else last_hash, digest)
            last_tokens += count
            new_digests.append(digest)
            new_hashes.append(last_hash)
            new_tokens.append(last_tokens)
        digests.extend(new_digests)
        hashes.extend(new_hashes)
        tokens.extend(new_tokens)
        prompt = last_tokens + (shift if len(tokens) > 1 else 0) + self.request_overhead
        after = kept - 1 if kept > shared else 0
        return CutRequest(
            tools, tools_key, sent, digests, hashes, tokens, prompt, shared, after, shift
        )

    def _tools_block(self, tools: Tools) -> tuple[bytes, bytes, int]:
        memo = self._tools_memo.get(id(tools))
        if memo is None or memo[0] is not tools:
            text = serialise(list(tools)) if tools else b""
            key = hashlib.blake2b(text, digest_size=16).digest()
            memo = (tools, key, chain(b"", key), self.tools_tokens(tools) if tools else 0)
            self._tools_memo[id(tools)] = memo
        return memo[1], memo[2], memo[3]

    def message_block(self, message: Message) -> tuple[bytes, int]:
        # Keyed by identity, holding the object so its id is not reused.
        memo = self._message_memo.get(id(message))
        if memo is None or memo[0] is not message:
            digest, tokens = self._plain_block(message)
            memo = (message, digest, tokens)
            self._message_memo[id(message)] = memo
        return memo[1], memo[2]

    def _plain_block(self, message: Message) -> tuple[bytes, int]:
        # Only str keys and str or None values: equal items then mean equal
        # JSON (1 == 1.0 == True would not).
        key = text_only_items(message)
        found = self._plain_memo.get(key) if key is not None else None
        if found is None:
            found = (message_digest(message, key), self.message_tokens(message))
            if key is not None:
                self._plain_memo[key] = found
        return found


def message_digest(message: Message, items: tuple[tuple[str, str | None], ...] | None) -> bytes:
    """A message's block hash: from its items when they are all text (see
    ``text_hash``), else from its JSON."""
    if items is not None:
        return items_digest(items)
    hasher = hashlib.blake2b(JSON_TAG, digest_size=16)
    hasher.update(serialise(message))
    return hasher.digest()


def prefix_key(hashes: Sequence[bytes], boundary: int) -> bytes:
    """What identifies a request's prefix up to ``boundary`` (see ``_Request.hashes``)."""
    return hashes[boundary] if boundary < 2 else hashes[1] + hashes[boundary]


def same_prefix(one: Sequence[bytes], other: Sequence[bytes], boundary: int) -> bool:
    """Whether two requests' prefixes up to ``boundary`` are the same."""
    return one[boundary] == other[boundary] and (boundary < 2 or one[1] == other[1])


def chain(prefix: bytes, digest: bytes) -> bytes:
    return hashlib.blake2b(prefix + digest, digest_size=16).digest()


def serialise(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()
