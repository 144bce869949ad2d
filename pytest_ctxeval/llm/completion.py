"""A model's answer as the run keeps it, and its form in a cassette: what
is written, and what a replay reads back (bounded like a live answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .bounds import bounded, bounded_call, bounded_field, token_count, too_many_calls
from .model_errors import ModelError


@dataclass
class Completion:
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    # "stop", "tool_calls", "length" (cut off at the token limit), ...; None if unknown.
    finish_reason: str | None = None


def cassette_response(completion: Completion) -> dict[str, Any]:
    # No latency: it differs on every run and would make re-recorded files churn.
    return {
        "content": completion.content,
        "tool_calls": completion.tool_calls,
        "usage": {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
        },
        "cost_usd": completion.cost_usd,
        "finish_reason": completion.finish_reason,
    }


def replayed(response: dict[str, Any]) -> Completion:
    """A cassette's response (its types checked on load) as a Completion,
    bounded like a live one: a cassette written by hand or by an older
    version scores as the same answer arriving live would."""
    usage = response.get("usage") or {}
    calls = response.get("tool_calls") or []
    problem = too_many_calls(calls)
    if problem is not None:
        raise ModelError(f"recorded response: {problem}")
    return Completion(
        content=bounded(response.get("content")),
        tool_calls=[bounded_call(call) for call in calls],
        prompt_tokens=token_count(usage.get("prompt_tokens")),
        completion_tokens=token_count(usage.get("completion_tokens")),
        cost_usd=float(response.get("cost_usd") or 0.0),
        finish_reason=bounded_field(response.get("finish_reason")),
    )
