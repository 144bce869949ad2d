"""Token counting through litellm, cached per distinct text so total work
grows with the amount of text, not with turns x text."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from ..messages import content_text
from ._litellm import get_litellm

# OpenAI's chat format costs a few tokens per message and per reply.
PER_MESSAGE_OVERHEAD = 4
PER_REQUEST_OVERHEAD = 3
# Mock models count like a current OpenAI model (tiktoken ships in litellm).
MOCK_TOKENIZER_MODEL = "gpt-4o-mini"


def tokenizer_model(model: str) -> str:
    return MOCK_TOKENIZER_MODEL if model.startswith("ctxeval/") else model


@lru_cache(maxsize=200_000)
def count_text_tokens(text: str, model: str = MOCK_TOKENIZER_MODEL) -> int:
    if not text:
        return 0
    litellm = get_litellm()
    try:
        return int(litellm.token_counter(model=tokenizer_model(model), text=text))
    except Exception:  # an unknown tokenizer must not break a run: fall back
        return int(litellm.token_counter(model=MOCK_TOKENIZER_MODEL, text=text))


def message_tokens(message: dict[str, Any], model: str = MOCK_TOKENIZER_MODEL) -> int:
    tokens = PER_MESSAGE_OVERHEAD + count_text_tokens(content_text(message), model)
    if message.get("tool_calls"):
        tokens += count_text_tokens(json.dumps(message["tool_calls"], sort_keys=True), model)
    return tokens


def window_tokens(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    model: str = MOCK_TOKENIZER_MODEL,
) -> int:
    total = PER_REQUEST_OVERHEAD + sum(message_tokens(m, model) for m in messages)
    if tools:
        total += count_text_tokens(json.dumps(tools, sort_keys=True), model)
    return total


def shared_prefix_tokens(
    previous: list[dict[str, Any]], current: list[dict[str, Any]], model: str = MOCK_TOKENIZER_MODEL
) -> int:
    """Tokens of the leading messages two requests have in common: what a
    provider's prompt cache could reuse."""
    return sum(message_tokens(m, model) for m in current[: shared_prefix_length(previous, current)])


def shared_prefix_length(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> int:
    """How many leading messages two requests have in common (usually the
    very same objects, so identity is checked first)."""
    shared, limit = 0, min(len(previous), len(current))
    while shared < limit and (
        current[shared] is previous[shared] or current[shared] == previous[shared]
    ):
        shared += 1
    return shared


class PromptMeter:
    """Prompt tokens of successive requests in one session.

    Consecutive windows share most of their messages (usually the very same
    objects), so each request only counts the messages after the prefix it
    shares with the previous one: a long session costs time in proportion
    to its new text, not to turns x text."""

    def __init__(self, model: str = MOCK_TOKENIZER_MODEL) -> None:
        self.model = model
        self._messages: list[dict[str, Any]] = []
        self._cumulative: list[int] = [0]  # tokens of messages[:i]
        self._tools: list[dict[str, Any]] | None = None
        self._tools_tokens = 0

    def measure(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[int, int]:
        """(prompt tokens, tokens of the message prefix shared with the previous request)."""
        shared = shared_prefix_length(self._messages, messages)
        cumulative = self._cumulative[: shared + 1]
        running = cumulative[-1]
        for message in messages[shared:]:
            running += message_tokens(message, self.model)
            cumulative.append(running)
        self._messages, self._cumulative = messages, cumulative
        if tools != self._tools:
            self._tools = tools
            self._tools_tokens = (
                count_text_tokens(json.dumps(tools, sort_keys=True), self.model) if tools else 0
            )
        return PER_REQUEST_OVERHEAD + running + self._tools_tokens, cumulative[shared]
