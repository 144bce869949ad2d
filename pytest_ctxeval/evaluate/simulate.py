"""Replay a session through a strategy and record the window it would send
at every model call (every assistant message of the session is one call)."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..llm.tokens import PromptMeter
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
        def call(messages: list[Message], **kwargs: Any) -> str:
            result = self.client.complete(messages, **kwargs)
            if self.trace is not None:
                self.trace.strategy_calls += 1
                self.trace.strategy_cost_usd += result.cost_usd
                self.trace.strategy_prompt_tokens += result.prompt_tokens
                self.trace.strategy_completion_tokens += result.completion_tokens
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
    conversation: Conversation, strategy: ContextStrategy, *, client: Any, model: str
) -> SessionTrace:
    from ..llm.tokens import count_text_tokens

    trace = SessionTrace(strategy=strategy)
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        counter = StrategyCallCounter(client, trace)
        setup(counter.context(lambda text: count_text_tokens(text, model)))
    meter = PromptMeter(model)
    previous: list[Message] = []
    previous_tools: list[dict[str, Any]] = []
    new_chats = set(conversation.session_starts)
    for index, message in enumerate(conversation.messages):
        if index in new_chats:
            end_session = getattr(strategy, "end_session", None)
            if callable(end_session):
                end_session()
        if message["role"] == "assistant" and index > 0:
            window = strategy.window()
            tokens, shared = meter.measure(window.messages, window.tools)
            trace.requests.append(RequestStats(index, tokens, shared))
            previous, previous_tools = window.messages, window.tools
        # A copy: a strategy that edits what it is given must not reach the
        # session, the ground truth or the other strategies.
        strategy.add(copy.deepcopy(message))
    trace.last_window, trace.last_tools = previous, previous_tools
    return trace
