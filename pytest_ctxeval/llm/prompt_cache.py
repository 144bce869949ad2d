"""What a provider's prompt cache would serve, request by request, over one session.

Each request is cut into blocks, with a prefix hash and the prefix's tokens
at every block boundary (see ``request_blocks``): two requests share a
prefix up to a boundary exactly when their prefixes there are the same.

Two rule sets (``CacheRules``):

- ``openai``: automatic.  Every prompt is cached; a later request reads the
  longest prefix it shares, at a block boundary, with any earlier prompt
  still alive, from 1,024 tokens on and in 128-token steps.
- ``anthropic``: explicit breakpoints, placed where agent loops usually put
  them: the end of the tools, the end of the system prompt and the last
  message.  A breakpoint writes its prefix (at a 1.25x premium) when it is at
  least the model family's minimum long (``cache_rules``); a request reads
  the longest prefix written earlier that ends at one of its own breakpoints
  or up to 20 blocks before one.
- ``anthropic-auto``: Anthropic's automatic caching, the same with a single
  breakpoint on the last message.

The rule sets and the per-family minimums are in ``cache_rules``.

An entry lives ``ttl_s`` (5 minutes) after it was last written or read;
requests are ``seconds_per_request`` apart unless given their own times.

Alongside, the cache-breaker detector compares each request with the one
before: when the earlier one is not a prefix of the later one, it names the
first block that differs and why (``BREAK_REASONS``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cache_breaks import BREAK_REASONS as BREAK_REASONS
from .cache_breaks import message_reason
from .cache_rules import ANTHROPIC as ANTHROPIC
from .cache_rules import ANTHROPIC_AUTO as ANTHROPIC_AUTO
from .cache_rules import DEFAULT_TTL_S as DEFAULT_TTL_S
from .cache_rules import OPENAI as OPENAI
from .cache_rules import RULES as RULES
from .cache_rules import CacheRules as CacheRules
from .cache_rules import rules_for as rules_for
from .prefix_list import PrefixList
from .request_blocks import BlockCutter, CutRequest, Message, Tools, prefix_key, same_prefix

# An agent's turn (model call plus tool runs), when requests carry no time.
DEFAULT_SECONDS_PER_REQUEST = 30.0
# Anthropic looks for an earlier write up to this many blocks before a breakpoint.
BREAKPOINT_LOOKBACK_BLOCKS = 20
# Breaks kept per session: a sliding window breaks the prefix on every call.
MAX_BREAKS = 5


@dataclass(frozen=True)
class CacheBreak:
    """The first block at which a request stopped extending the one before.

    ``request`` numbers the session's model calls from 1; ``message`` indexes
    the earlier request's messages (0 is the system prompt), None when the
    tool definitions differ."""

    request: int
    message: int | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"request": self.request, "message": self.message, "reason": self.reason}


@dataclass(frozen=True)
class CacheUse:
    """What the cache did for one request (tokens)."""

    prompt_tokens: int
    cached_tokens: int  # read from the cache
    write_tokens: int  # written at a premium (Anthropic); 0 under automatic caching
    cache_break: CacheBreak | None = None


@dataclass
class PromptCache:
    """Feed a session's requests in order with ``send``; ``peek`` asks what a
    request would get without storing it (the probe, asked once per probe)."""

    rules: CacheRules
    message_tokens: Callable[[Message], int]
    tools_tokens: Callable[[Tools], int]
    request_overhead: int = 0
    seconds_per_request: float = DEFAULT_SECONDS_PER_REQUEST
    requests: int = 0
    breaks: list[CacheBreak] = field(default_factory=list)
    break_count: int = 0
    # Explicit breakpoints: each written prefix (its boundary hash) and how
    # long it lives.
    _alive_until: dict[bytes, float] = field(default_factory=dict)
    # Automatic caching: each prompt stored whole, as (boundary hashes, how
    # many of them are its own, alive until), dropping a stored prompt once a
    # later one extends it: a prefix hash chains every block before it, so a
    # prompt holds every prefix of its own.  A session that extends its
    # window keeps one entry, and storing a request costs nothing per
    # message it repeats.  (A later request that extends the previous one
    # appends to the previous one's lists, hence the count.)
    _prompts: list[tuple[PrefixList[bytes], int, float]] = field(default_factory=list)
    # Whether the previous request's lists are this cache's alone to extend
    # (a fork shares them with its original: then both copy).
    _previous_owned: bool = True
    _previous: CutRequest | None = None
    _blocks: BlockCutter = field(init=False)

    def __post_init__(self) -> None:
        self._blocks = BlockCutter(self.message_tokens, self.tools_tokens, self.request_overhead)

    def send(
        self,
        messages: Sequence[Message],
        tools: Tools | None = None,
        *,
        at_s: float | None = None,
        identical: int | None = None,
        after_first: int | None = None,
    ) -> CacheUse:
        """Account one session request: read what is cached, then store it.
        Requests come in time order.  ``identical``, when the caller knows it:
        how many leading messages are the very objects the previous ``send``
        was given, and ``after_first`` how many after the first message, when
        that one is not (each saves a pass over the window)."""
        self.requests += 1
        now = self._time(at_s)
        request = self._blocks.cut(
            self._previous,
            messages,
            tools or [],
            identical,
            after_first,
            extend=self._previous_owned,
        )
        self._previous_owned = True
        cached, write, written = self._lookup(request, now)
        self._store(request, written, now)
        found = self._break(request)
        if found is not None:
            self.break_count += 1
            if len(self.breaks) < MAX_BREAKS:
                self.breaks.append(found)
        self._previous = request
        return CacheUse(request.prompt_tokens, cached, write, found)

    def peek(
        self, messages: Sequence[Message], tools: Tools | None = None, *, at_s: float | None = None
    ) -> CacheUse:
        """What the next request would read, without changing the cache."""
        request = self._blocks.cut(self._previous, messages, tools or [])
        cached, write, _ = self._lookup(request, self._time(at_s, ahead=1))
        return CacheUse(request.prompt_tokens, cached, write)

    def tokens_of(self, message: Message) -> int:
        """``message_tokens`` of a message, counted once per message object."""
        return self._blocks.message_block(message)[1]

    def fork(self) -> PromptCache:
        """A copy whose later requests leave this one unchanged."""
        self._previous_owned = False  # the copy shares the previous request
        forked = dataclasses.replace(
            self,
            breaks=list(self.breaks),
            _alive_until=dict(self._alive_until),
            _prompts=list(self._prompts),
        )
        forked._blocks = self._blocks.fork()
        return forked

    def _time(self, at_s: float | None, ahead: int = 0) -> float:
        if at_s is not None:
            return at_s
        return (self.requests - 1 + ahead) * self.seconds_per_request

    # -- reading and writing -----------------------------------------------------------------

    def _alive(self, key: bytes, now: float) -> bool:
        until = self._alive_until.get(key)
        return until is not None and until >= now

    def _lookup(self, request: CutRequest, now: float) -> tuple[int, int, Sequence[int]]:
        """(tokens read, tokens written, boundaries to keep alive after this request)."""
        rules = self.rules
        if not rules.breakpoints:
            hit = self._longest_alive(request, now)
            cached = _steps(request.tokens_at(hit), rules) if hit is not None else 0
            # Every prompt is cached whole, with each shorter prefix of it.
            return min(cached, request.prompt_tokens), 0, range(len(request.hashes))
        marks = self._breakpoints(request)
        hit = 0
        for mark in marks:
            for boundary in range(mark, max(0, mark - BREAKPOINT_LOOKBACK_BLOCKS) - 1, -1):
                if boundary > hit and self._alive(prefix_key(request.hashes, boundary), now):
                    hit = boundary
                    break
        cached = request.tokens_at(hit) if self._alive(prefix_key(request.hashes, hit), now) else 0
        written = [m for m in marks if request.tokens_at(m) >= rules.min_tokens]
        deepest = max((request.tokens_at(m) for m in written), default=0)
        # A read keeps its entry alive too.
        keep = [*written, hit] if cached else written
        return cached, max(deepest - cached, 0), keep

    def _longest_alive(self, request: CutRequest, now: float) -> int | None:
        """The last boundary of ``request`` that a stored prompt still alive
        shares, or None.  Prefix hashes chain, so two prompts with the same
        first message agree up to some boundary and differ from there on:
        binary search for it."""
        hashes = request.hashes
        best: int | None = None
        for stored, length, until in self._prompts:
            if until < now:
                continue
            if length > 1 and len(hashes) > 1 and stored[1] != hashes[1]:
                agree = 0 if stored[0] == hashes[0] else -1  # another first message
            else:
                agree = stored.last_agreeing(hashes, length)
            if agree >= 0 and (best is None or agree > best):
                best = agree
        return best

    def _breakpoints(self, request: CutRequest) -> list[int]:
        """End of the tools, end of the system prompt, the last message (only
        the last block, under automatic caching)."""
        messages = request.messages
        if self.rules.last_block_only:
            return [len(messages)]
        marks = {0} if request.tokens_at(0) else set()
        if messages and messages[0].get("role") == "system":
            marks.add(1)
        if messages:
            marks.add(len(messages))
        return sorted(marks)

    def _store(self, request: CutRequest, boundaries: Sequence[int], now: float) -> None:
        until = now + self.rules.ttl_s
        hashes = request.hashes
        if boundaries == range(len(hashes)):  # automatic caching: the whole prompt
            self._prompts = [
                (stored, length, stored_until)
                for stored, length, stored_until in self._prompts
                if stored_until >= now  # expired (requests come in time order)
                and not (
                    stored_until <= until
                    and length <= len(hashes)
                    and same_prefix(stored, hashes, length - 1)  # a prefix of this one
                )
            ]
            self._prompts.append((hashes, len(hashes), until))
        else:
            keys = (prefix_key(hashes, b) for b in boundaries)
            self._alive_until.update(dict.fromkeys(keys, until))

    # -- the cache-breaker detector -----------------------------------------------------------

    def _break(self, request: CutRequest) -> CacheBreak | None:
        previous = self._previous
        if previous is None:
            return None
        if previous.tools_key != request.tools_key:
            same = _canonical(list(previous.tools)) == _canonical(list(request.tools))
            return CacheBreak(self.requests, None, "tool_key_order" if same else "tool_changed")
        index = request.shared  # the same objects: the same bytes
        if request.after_first and request.digests[0] == previous.digests[0]:
            index = 1 + request.after_first
        for before, after in zip(
            previous.digests.iter_from(index), request.digests.iter_from(index), strict=False
        ):
            if before != after:
                break
            index += 1
        if index == len(previous.digests):
            return None  # the earlier request is a prefix of this one
        reason = message_reason(
            previous.messages, previous.digests, request.messages, request.digests, index
        )
        return CacheBreak(self.requests, index, reason)


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _steps(tokens: int, rules: CacheRules) -> int:
    if tokens < rules.min_tokens:
        return 0
    return tokens // rules.step_tokens * rules.step_tokens
