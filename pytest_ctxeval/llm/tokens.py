"""Token counting through litellm, cached per distinct text so total work
grows with the amount of text, not with turns x text."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

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
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    tokens = PER_MESSAGE_OVERHEAD + count_text_tokens(content or "", model)
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
    shared = 0
    for old, new in zip(previous, current):
        if old != new:
            break
        shared += message_tokens(new, model)
    return shared
