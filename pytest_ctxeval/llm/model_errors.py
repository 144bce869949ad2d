"""How a failed model call is told apart: the error the run records, the
request that was too long for the model, the errors worth retrying and the
wait a provider asks for."""

from __future__ import annotations

import re

from ..redact import scrub

RETRYABLE = (
    "RateLimitError",
    "ServiceUnavailableError",
    "InternalServerError",
    "APIConnectionError",
    "Timeout",
    "APIError",
    "BadGatewayError",
)


class ModelError(RuntimeError):
    """A model call that failed for good (after retries, or not retryable)."""

    def __init__(
        self,
        message: str,
        *,
        context_exceeded: bool = False,
        unreached: bool = False,
        stop: bool = False,
    ) -> None:
        # Error bodies may echo the request's headers: scrubbed before anyone
        # can store, show or log the message.
        super().__init__(scrub(message))
        # The request was longer than the model's context window.
        self.context_exceeded = context_exceeded
        # The call timed out or never got through (counts toward the breaker).
        self.unreached = unreached
        # The model is given up on (see faults): every later call fails so.
        self.stop = stop


# How providers and OpenAI-compatible servers word a request that is too long
# (OpenAI, Anthropic, vLLM, llama.cpp), for when litellm maps it to a plain 400.
_CONTEXT_EXCEEDED = re.compile(
    r"maximum context length|context[ _]length[ _]exceeded|exceeds? (the )?context window"
    r"|context window of \d+|prompt is too long|too many tokens|input is too long",
    re.IGNORECASE,
)


def is_context_exceeded(exc: BaseException) -> bool:
    name = type(exc).__name__
    if name == "RateLimitError":  # "too many tokens" per minute: wait, do not give up
        return False
    return name == "ContextWindowExceededError" or bool(_CONTEXT_EXCEEDED.search(str(exc)))


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a provider asks for (retry-after-ms / retry-after seconds);
    None when it names none and exponential backoff applies."""
    headers = getattr(exc, "litellm_response_headers", None) or getattr(
        getattr(exc, "response", None), "headers", None
    )
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            wait = float(value) * scale
            # Capped where it is waited for; "nan" is no wait a server can mean.
            return max(wait, 0.0) if wait == wait else None
        except (TypeError, ValueError):  # an HTTP date: not worth parsing, back off instead
            return None
    return None
