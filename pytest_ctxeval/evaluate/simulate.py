"""Replay a session through a strategy and record the window it would send
at every model call (every assistant message of the session is one call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..llm.tokens import shared_prefix_tokens, window_tokens
from ..scenario.build import Conversation
from ..strategies.base import ContextStrategy, Message, StrategyContext


@dataclass(frozen=True)
class RequestStats:
    message_index: int  # the assistant message this request produced
    prompt_tokens: int
    shared_prefix_tokens: int


@dataclass
class SessionTrace:
    """A strategy's state at the end of the session, and what it cost to get there."""

    strategy: ContextStrategy
    requests: list[RequestStats] = field(default_factory=list)
    last_window: list[Message] = field(default_factory=list)
    strategy_calls: int = 0
    strategy_cost_usd: float = 0.0

    @property
    def cumulative_input_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.requests)

    @property
    def peak_prompt_tokens(self) -> int:
        return max((r.prompt_tokens for r in self.requests), default=0)


class StrategyCallCounter:
    """Lets a strategy call the model (summaries, sub-agents) and counts it."""

    def __init__(self, client: Any, trace: SessionTrace | None = None) -> None:
        self.client = client
        self.trace = trace

    def context(self, count_tokens: Any) -> StrategyContext:
        # A plain function, not a bound method: strategies are deep-copied on
        # fork and must not copy the client with them.
        def complete(messages: list[Message]) -> str:
            result = self.client.complete(messages)
            if self.trace is not None:
                self.trace.strategy_calls += 1
                self.trace.strategy_cost_usd += result.cost_usd
            return result.content or ""

        return StrategyContext(count_tokens=count_tokens, complete=complete)


def simulate(
    conversation: Conversation, strategy: ContextStrategy, *, client: Any, model: str
) -> SessionTrace:
    from ..llm.tokens import count_text_tokens

    trace = SessionTrace(strategy=strategy)
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        counter = StrategyCallCounter(client, trace)
        setup(counter.context(lambda text: count_text_tokens(text, model)))
    previous: list[Message] = []
    new_chats = set(conversation.session_starts)
    for index, message in enumerate(conversation.messages):
        if index in new_chats:
            end_session = getattr(strategy, "end_session", None)
            if callable(end_session):
                end_session()
        if message["role"] == "assistant" and index > 0:
            window = strategy.window()
            tokens = window_tokens(window.messages, window.tools, model)
            shared = shared_prefix_tokens(previous, window.messages, model)
            trace.requests.append(RequestStats(index, tokens, shared))
            previous = window.messages
        strategy.add(message)
    trace.last_window = previous
    return trace
