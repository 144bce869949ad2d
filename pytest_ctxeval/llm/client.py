"""Every model call goes through here: litellm, retries with backoff, usage
and cost accounting."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ._litellm import get_litellm

RETRYABLE = (
    "RateLimitError",
    "ServiceUnavailableError",
    "InternalServerError",
    "APIConnectionError",
    "Timeout",
    "APIError",
)


class ModelError(RuntimeError):
    """A model call that failed for good (after retries, or not retryable)."""


@dataclass
class Completion:
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0


@dataclass
class ModelClient:
    model: str
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout_s: float = 120.0
    max_attempts: int = 4
    backoff_s: float = 1.0
    calls: int = 0

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> Completion:
        litellm = get_litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "timeout": self.timeout_s,
        }
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
            # OpenAI-compatible local servers want some key; never a real one here.
            kwargs["api_key"] = self.api_key or "sk-ctxeval-local"
        elif self.api_key:
            kwargs["api_key"] = self.api_key
        started = time.perf_counter()
        for attempt in range(1, self.max_attempts + 1):
            try:
                self.calls += 1
                response = litellm.completion(**kwargs)
                break
            except Exception as exc:  # litellm maps provider errors to its own types
                name = type(exc).__name__
                if name == "ContextWindowExceededError" or name not in RETRYABLE:
                    raise ModelError(f"{name}: {_first_line(exc)}") from exc
                if attempt == self.max_attempts:
                    raise ModelError(
                        f"{name} after {attempt} attempts: {_first_line(exc)}"
                    ) from exc
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
        return self._completion(response, time.perf_counter() - started)

    def _completion(self, response: Any, latency: float) -> Completion:
        try:
            message = response.choices[0].message
        except (AttributeError, IndexError) as exc:
            raise ModelError(f"malformed response from {self.model}: no choices") from exc
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments or ""},
            }
            for call in (message.tool_calls or [])
        ]
        usage = getattr(response, "usage", None)
        return Completion(
            content=message.content,
            tool_calls=calls,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=self._cost(response),
            latency_s=latency,
        )

    def _cost(self, response: Any) -> float:
        if self.model.startswith("ctxeval/"):
            return 0.0
        try:
            return float(get_litellm().completion_cost(completion_response=response) or 0.0)
        except Exception:  # models missing from the bundled cost map cost "unknown" = 0
            return 0.0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
