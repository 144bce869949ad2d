"""Per-request telemetry of a simulated session: what each window kept,
left out, stored and wrote, and what the provider's prompt cache served.

Parts are told apart cheaply, without matching texts (``window_trace`` does
that, once, for the probe's window):

- a window message that *is* one of the messages the strategy was given
  (the same object, or the same text and role) is kept;
- every other window message is the strategy's own text (a summary, notes,
  a shortened or pruned message): ``summarised_tokens``;
- session tokens not kept are ``evicted_tokens``; ``stored_tokens`` are the
  tokens of the texts the window says can be retrieved (``Window.retrievable``),
  a store that may also hold text still in the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..llm.prompt_cache import CacheUse, PromptCache
from ..llm.running_totals import RunningTotals
from ..messages import content_text, identical_prefix_length, kept_after_new_first
from ..strategies.base import Message, Window

# The per-request series a record keeps, in this order (see ResultRecord.session_requests).
SERIES = (
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "strategy_calls",
    "evicted_tokens",
    "stored_tokens",
    "summarised_tokens",
)


@dataclass(frozen=True)
class RequestParts:
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    strategy_calls: int
    evicted_tokens: int
    stored_tokens: int
    summarised_tokens: int


@dataclass
class SessionLedger:
    """Fed the messages a strategy is given and the windows it sends, in order."""

    cache: PromptCache
    count_text: Any  # (text) -> tokens
    count_reply: Any  # (assistant message) -> its output tokens
    _given_ids: set[int] = field(default_factory=set)
    _given_texts: dict[tuple[str, str], int] = field(default_factory=dict)
    _given: list[Message] = field(default_factory=list)  # keeps the ids alive
    _given_tokens: int = 0
    _calls_before: int = 0
    # The previous window, and its kept / written tokens over messages[:i]:
    # a window that starts with the previous one's objects, or holds them
    # after a new first message, reuses them.
    _window: list[Message] = field(default_factory=list)
    _kept: RunningTotals = field(default_factory=RunningTotals)
    _written: RunningTotals = field(default_factory=RunningTotals)
    # The previous window's retrievable texts, and their tokens over texts[:i].
    _retrievable: list[str] = field(default_factory=list)
    _retrievable_totals: list[int] = field(default_factory=lambda: [0])

    def given(self, message: Message) -> None:
        self._given.append(message)
        self._given_ids.add(id(message))
        key = (str(message.get("role")), content_text(message))
        self._given_texts[key] = self._given_texts.get(key, 0) + 1
        self._given_tokens += self.cache.tokens_of(message)

    def request(
        self,
        window: Window,
        reply: Message,
        strategy_calls: int,
        *,
        identical: int | None = None,
        after_first: int | None = None,
        retrievable_identical: int | None = None,
    ) -> RequestParts:
        """One model call: ``reply`` is the assistant message it produced;
        ``strategy_calls`` the strategy's own calls so far in the session.
        ``identical``, when the caller knows it: how many leading messages are
        the very objects of the previous window, and ``after_first`` after
        its first message when that is none (see ``PromptCache.send``);
        ``retrievable_identical``, how many leading retrievable texts are the
        very texts the previous window listed."""
        use: CacheUse = self.cache.send(
            window.messages, window.tools, identical=identical, after_first=after_first
        )
        kept, written = self._parts(window.messages, identical, after_first)
        calls, self._calls_before = strategy_calls - self._calls_before, strategy_calls
        return RequestParts(
            cached_tokens=use.cached_tokens,
            cache_write_tokens=use.write_tokens,
            output_tokens=self.count_reply(reply),
            strategy_calls=calls,
            evicted_tokens=max(self._given_tokens - kept, 0),
            stored_tokens=self._stored_tokens(window.retrievable, retrievable_identical),
            summarised_tokens=written,
        )

    def _stored_tokens(self, retrievable: list[str], identical: int | None) -> int:
        """Tokens of the texts a window says can be retrieved.  A store only
        grows, so the texts the previous window listed first (the same
        objects, ``identical`` of them when the strategy says so) keep their
        running total."""
        if identical is None:
            identical = identical_prefix_length(self._retrievable, retrievable)
        shared = identical
        totals = self._retrievable_totals
        del totals[shared + 1 :]  # kept in place: a session's lists grow, not copied
        for text in retrievable[shared:]:
            totals.append(totals[-1] + self.count_text(text))
        self._retrievable[shared:] = retrievable[shared:]
        return totals[-1]

    def _parts(
        self, messages: list[Message], identical: int | None, after_first: int | None
    ) -> tuple[int, int]:
        """(tokens of given messages, tokens of the strategy's own) in the window."""
        window, kept, written = self._window, self._kept, self._written
        if identical is None:
            identical = identical_prefix_length(window, messages)
        shared = kept_after_new_first(window, messages, identical, after_first)
        if shared:  # only the first message is new
            kept.keep(shared)
            written.keep(shared)
            given, tokens = self._split(messages[0])
            kept.rewrite_first(tokens if given else 0)
            written.rewrite_first(0 if given else tokens)
            window[0] = messages[0]
        else:
            shared = identical
            kept.keep(shared)
            written.keep(shared)
        for message in messages[shared:]:
            given, tokens = self._split(message)
            kept.add(tokens if given else 0)
            written.add(0 if given else tokens)
        del window[shared:]  # in place, as in _stored_tokens
        window.extend(messages[shared:])
        return kept.last, written.last

    def _split(self, message: Message) -> tuple[bool, int]:
        """(whether ``message`` is one the strategy was given, its tokens)."""
        given = id(message) in self._given_ids or self._is_given_text(message)
        return given, self.cache.tokens_of(message)

    def _is_given_text(self, message: Message) -> bool:
        return (str(message.get("role")), content_text(message)) in self._given_texts
