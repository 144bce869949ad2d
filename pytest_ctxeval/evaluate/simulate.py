"""Replay a session through a strategy and record the window it would send
at every model call (every assistant message of the session is one call)."""

from __future__ import annotations

import dataclasses
import json
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..llm.prompt_cache import DEFAULT_SECONDS_PER_REQUEST, CacheRules, PromptCache
from ..llm.tokens import PromptMeter
from ..messages import identical_after_first, identical_prefix_length
from ..scenario.build import Conversation
from ..strategies.base import (
    ContextStrategy,
    Message,
    StrategyContext,
    Window,
    copy_message,
    fork_strategy,
)
from ..strategies.unchanged_prefix import (
    keeps_sent_messages,
    lent_window_of,
    unchanged_after_first_of,
    unchanged_prefix_of,
    unchanged_retrievable_of,
)
from .prefix_unions import Unchanged
from .sent_copies import SentCopies
from .session_ledger import SessionLedger


@dataclass(frozen=True)
class RequestStats:
    message_index: int  # the assistant message this request produced
    prompt_tokens: int
    shared_prefix_tokens: int
    # What the provider's prompt cache served and took (see llm.prompt_cache),
    # the reply's tokens, and the strategy's work for this call (see
    # evaluate.session_ledger).
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    strategy_calls: int = 0
    evicted_tokens: int = 0
    stored_tokens: int = 0
    summarised_tokens: int = 0


@dataclass
class SessionTrace:
    """A strategy's state at the end of the session, and what it cost to get there."""

    strategy: ContextStrategy
    requests: list[RequestStats] = field(default_factory=list)
    last_window: list[Message] = field(default_factory=list)
    # The tools of that last request: they come before the messages in the
    # provider's prompt cache, so the probe's cached prefix depends on them.
    last_tools: list[dict[str, Any]] = field(default_factory=list)
    strategy_calls: int = 0
    strategy_cost_usd: float = 0.0
    # Tokens of the strategy's own model calls (summaries, memories, sub-agents),
    # reported apart from the main windows in ``requests``: for ``subagent``
    # these are the sub-call tokens.
    strategy_prompt_tokens: int = 0
    strategy_completion_tokens: int = 0
    # --ctx-sweep: the trace as it stood before the message at each index,
    # with a fork of the strategy (see evaluate.sweep).
    forks: dict[int, SessionTrace] = field(default_factory=dict)
    # Counts the strategy's own model calls into a trace; a fork's calls go
    # into the trace it is pointed at (see ``counting_into``).
    counter: StrategyCallCounter | None = field(default=None, repr=False)
    # The provider's prompt cache after the session's requests: the probe reads from it.
    cache: PromptCache | None = field(default=None, repr=False)
    # A record's session fields, worked out once per state of this trace
    # (see session_costs.fill_session_fields): (state, fields).
    session_fields: tuple[tuple[Any, ...], dict[str, Any]] | None = field(default=None, repr=False)

    def snapshot(self) -> SessionTrace:
        """This trace as it stands, with a fork of the strategy."""
        return dataclasses.replace(
            self,
            strategy=fork_strategy(self.strategy),
            requests=list(self.requests),
            forks={},
            cache=self.cache.fork() if self.cache is not None else None,
            session_fields=None,
        )

    def counting_into(self) -> SessionTrace:
        """This trace, with the strategy's own calls from now on counted into it."""
        if self.counter is not None:
            self.counter.trace = self
        return self

    @property
    def cumulative_input_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.requests)

    @property
    def peak_prompt_tokens(self) -> int:
        return max((r.prompt_tokens for r in self.requests), default=0)


class StrategyCallCounter:
    """Lets a strategy call the model (summaries, sub-agents) and counts it."""

    _trace: weakref.ReferenceType[SessionTrace] | None

    def __init__(self, client: Any, trace: SessionTrace | None = None) -> None:
        self.client = client
        self.trace = trace

    # The trace holds this counter (and the strategy holds its calls): a weak
    # reference back leaves no cycle, so a finished session is freed at once
    # instead of waiting for, and lengthening, a full garbage collection.
    @property
    def trace(self) -> SessionTrace | None:
        return self._trace() if self._trace is not None else None

    @trace.setter
    def trace(self, trace: SessionTrace | None) -> None:
        self._trace = weakref.ref(trace) if trace is not None else None

    def context(self, count_tokens: Any) -> StrategyContext:
        # A plain function, not a bound method: strategies are deep-copied on
        # fork and must not copy the client with them.
        def call(messages: list[Message], **kwargs: Any) -> str:
            result = self.client.complete(messages, **kwargs)
            trace = self.trace
            if trace is not None:
                trace.strategy_calls += 1
                trace.strategy_cost_usd += result.cost_usd
                trace.strategy_prompt_tokens += result.prompt_tokens
                trace.strategy_completion_tokens += result.completion_tokens
            return result.content or ""

        def complete(messages: list[Message]) -> str:
            return call(messages)

        def complete_json(messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
            return parse_structured(call(messages, response_format=json_schema_format(schema)))

        return StrategyContext(
            count_tokens=count_tokens, complete=complete, complete_json=complete_json
        )


def json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's ``response_format`` for a JSON schema (litellm maps it for other providers)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "structured_output"))
    return {
        "type": "json_schema",
        "json_schema": {"name": name[:64], "schema": schema, "strict": True},
    }


def parse_structured(content: str) -> dict[str, Any]:
    """The object a structured-output reply holds; a clear error when it holds none."""
    text = content.strip()
    if text.startswith("```"):  # some models fence JSON even in JSON mode
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"structured output is not JSON ({exc}): {content[:200]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"structured output is not a JSON object: {content[:200]!r}")
    return value


def simulate(
    conversation: Conversation,
    strategy: ContextStrategy,
    *,
    client: Any,
    model: str,
    fork_at: set[int] | frozenset[int] = frozenset(),
    cache_rules: CacheRules | None = None,
    seconds_per_request: float = DEFAULT_SECONDS_PER_REQUEST,
    observe: Callable[[Window, bool, Unchanged], object] | None = None,
) -> SessionTrace:
    """``cache_rules``: the provider's prompt cache (None = the model's
    provider's, see ``costs.cache_rules``); requests ``seconds_per_request`` apart.
    ``observe(window, compacted, unchanged)`` sees every request's window
    (the fact ledger); ``compacted``: the strategy called the model to build
    it; ``unchanged``: how much of it is the previous window's."""
    from ..llm.tokens import count_text_tokens

    trace = SessionTrace(strategy=strategy)
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        counter = trace.counter = StrategyCallCounter(client, trace)
        context = counter.context(lambda text: count_text_tokens(text, model))
        context.recorded = conversation.recorded_windows  # for ``recorded``
        setup(context)
    meter = PromptMeter(model)
    ledger = session_ledger(model, cache_rules, seconds_per_request)
    trace.cache = ledger.cache
    previous: list[Message] = []
    previous_tools: list[dict[str, Any]] = []
    lent = False  # whether ``previous`` is the strategy's own list (lent_window_of)
    # A strategy that may edit what it sent is measured on copies (see sent_copies).
    sent = None if keeps_sent_messages(strategy) else SentCopies()
    new_chats = set(conversation.session_starts)
    for index, message in enumerate(conversation.messages):
        if index in new_chats:
            end_session = getattr(strategy, "end_session", None)
            if callable(end_session):
                end_session()
        if index in fork_at:
            # After a chat's end: a probe asked as a new chat's first turn is in the new chat.
            trace.last_window, trace.last_tools = kept_list(previous, lent), previous_tools
            trace.forks[index] = trace.snapshot()
        if message["role"] == "assistant" and index > 0:
            calls_before = trace.strategy_calls
            window, lent = lent_window_of(strategy)
            if sent is not None:
                window = sent.freeze(window)
            # The meter and the ledger saw every window so far: how much of
            # this one the previous window's very objects start, as the
            # strategy says it (see unchanged_prefix) or found by comparing,
            # and, when they do not start it, how many follow its first message.
            identical = unchanged_prefix_of(strategy) if sent is None else None
            if identical is None:
                identical = identical_prefix_length(previous, window.messages)
            after_first = 0
            if not identical:
                hint = unchanged_after_first_of(strategy) if sent is None else None
                after_first = (
                    identical_after_first(previous, window.messages) if hint is None else hint
                )
            retrievable = unchanged_retrievable_of(strategy)
            if observe is not None:  # reads the window now: a lent one is not kept
                unchanged = Unchanged(identical, after_first, retrievable)
                observe(window, trace.strategy_calls > calls_before, unchanged)
            tokens, shared = meter.measure(
                window.messages, window.tools, identical=identical, after_first=after_first
            )
            parts = ledger.request(
                window,
                message,
                trace.strategy_calls,
                identical=identical,
                after_first=after_first,
                retrievable_identical=retrievable,
            )
            trace.requests.append(RequestStats(index, tokens, shared, **vars(parts)))
            previous, previous_tools = window.messages, window.tools
        # A copy: a strategy that edits what it is given must not reach the
        # session, the ground truth or the other strategies.
        given = copy_message(message)
        ledger.given(given)
        strategy.add(given)
    trace.last_window, trace.last_tools = kept_list(previous, lent), previous_tools
    return trace


def kept_list(messages: list[Message], lent: bool) -> list[Message]:
    """``messages`` to keep past the strategy's next window: a lent list is
    the strategy's own, which that window changes in place."""
    return list(messages) if lent else messages


def session_ledger(
    model: str, rules: CacheRules | None, seconds_per_request: float
) -> SessionLedger:
    from ..llm import tokens
    from ..llm.costs import cache_rules

    def reply_tokens(message: Message) -> int:
        return max(tokens.message_tokens(message, model) - tokens.PER_MESSAGE_OVERHEAD, 0)

    def count_message(message: Message) -> int:
        return tokens.message_tokens(message, model)

    cache = PromptCache(
        rules or cache_rules(model),
        count_message,
        lambda tools: tokens.tools_tokens(list(tools), model),
        request_overhead=tokens.PER_REQUEST_OVERHEAD,
        seconds_per_request=seconds_per_request,
    )
    return SessionLedger(cache, lambda text: tokens.count_text_tokens(text, model), reply_tokens)
