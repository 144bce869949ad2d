"""The client of the mock models (``ctxeval/...``): the same answers, usage and
records as a call through litellm's custom provider, without importing
litellm (seconds of start-up in every process, and per-call overhead that
dwarfs the mock's own work).

The mocks never use cassettes, retries or deadlines (they answer at once
and cannot fail transiently), so all that is left of a call is: ask each
distinct request once, answer it, count its tokens, bound the text exactly
as a live answer is bounded."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .bounds import bounded as _bounded
from .bounds import bounded_call as _bounded_call
from .cassettes import CallContext, build_request, request_hash, response_problem
from .client import _CALLS_LOCK, Completion, ModelClient, ModelError
from .providers import PROVIDER, MockModelError, _reply_for
from .text_hash import items_digest, text_only_items
from .tokens import count_text_tokens, window_tokens

MOCK_PREFIX = f"{PROVIDER}/"
# What the custom provider adds to a reply's completion tokens when it calls a tool.
TOOL_CALL_TOKENS = 8
# A message content longer than this is keyed by its hash (see request_key).
LONG_TEXT_CHARS = 256


def is_mock_model(model: str) -> bool:
    return model.startswith(MOCK_PREFIX)


@dataclass
class MockModelClient(ModelClient):
    """A ModelClient for ``ctxeval/...`` models that answers in-process."""

    in_process = True

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        context: CallContext | None = None,
        response_format: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> Completion:
        # As in ModelClient.complete, identical requests (the `full`
        # strategy's and the ground truth's) share one answer.
        params: dict[str, Any] = {"temperature": self.temperature}
        if response_format:
            params["response_format"] = response_format
        if seed is not None:
            params["seed"] = seed
        key = request_key(build_request(self.model, [], tools or None, params), messages)
        return self._once(key, lambda: self._answer(messages, tools or [], response_format, seed))

    def _answer(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        response_format: dict[str, Any] | None,
        seed: int | None,
    ) -> Completion:
        started = time.perf_counter()
        with _CALLS_LOCK:
            self.calls += 1
        if not isinstance(messages, list) or not messages:
            raise ModelError(
                "MockModelError: the mock models expect a non-empty list of chat messages"
            )
        try:
            reply = _reply_for(
                self.model.removeprefix(MOCK_PREFIX), messages, tools, response_format, seed
            )
        except MockModelError as exc:
            raise ModelError(f"MockModelError: {exc}") from None
        calls = [_bounded_call(call) for call in reply.tool_calls]
        finish_reason = "tool_calls" if reply.tool_calls else "stop"
        problem = response_problem(
            {"content": reply.content, "tool_calls": calls, "finish_reason": finish_reason}
        )
        if problem is not None:
            raise ModelError(f"malformed response from {self.model}: {problem}")
        completion_tokens = count_text_tokens(reply.content or "")
        return Completion(
            content=_bounded(reply.content),
            tool_calls=calls,
            prompt_tokens=window_tokens(messages, tools),
            completion_tokens=completion_tokens + (TOOL_CALL_TOKENS if reply.tool_calls else 0),
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            finish_reason=finish_reason,
        )


def request_key(request: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """A key that tells two requests apart exactly when their canonical JSON
    does (keys sorted), which is all the mocks need (they record no
    cassettes).  ``request`` is the request without its messages.

    A long session's window is megabytes of JSON, most of it a few long
    texts: a text-only message with a long content is put in as the hash
    of its items (a JSON string, where any other message is an object), so
    only short messages are written out, in one go."""
    shown = [_hashed(m) if _long_text(m) else m for m in messages]
    return request_hash({**request, "messages": shown})


def _long_text(message: Any) -> bool:
    # Decided by the content alone: messages with equal JSON are shown alike.
    content = message.get("content") if isinstance(message, dict) else None
    return type(content) is str and len(content) > LONG_TEXT_CHARS


def _hashed(message: dict[str, Any]) -> Any:
    items = text_only_items(message)
    if items is None:
        return message
    return items_digest(sorted(items), 32).hex()


def model_client(model: str, **settings: Any) -> ModelClient:
    """The client for ``model``: in-process for the mocks, litellm otherwise."""
    kind = MockModelClient if is_mock_model(model) else ModelClient
    return kind(model, **settings)
