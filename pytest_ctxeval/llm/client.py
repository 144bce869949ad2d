"""Every model call goes through here: litellm, retries with backoff, usage
and cost accounting.

What comes back is untrusted text: an answer is checked for its types,
capped in length and scrubbed of secrets before anyone sees it, and so is
the text of every ModelError."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..redact import register_secret
from ._litellm import get_litellm
from .bounds import MAX_ANSWER_CHARS as MAX_ANSWER_CHARS
from .bounds import bounded as _bounded
from .bounds import bounded_call as _bounded_call
from .bounds import bounded_field, token_count, too_many_calls
from .call_meter import METER, call_label, log_answer
from .cassettes import (
    CallContext,
    CassetteError,
    CassetteStore,
    build_request,
    current_context,
    request_hash,
    response_problem,
)
from .completion import Completion as Completion
from .completion import cassette_response, replayed
from .deadline import DeadlinePassed, call_within
from .error_text import error_line
from .faults import BREAKER_CALLS, ModelHealth, unreached
from .model_errors import RETRYABLE as RETRYABLE
from .model_errors import ModelError as ModelError
from .model_errors import is_context_exceeded as is_context_exceeded
from .model_errors import retry_after_s

# Progress of long real-model runs: `pytest --log-cli-level=INFO` shows each
# call live (pytest's own live logging).
logger = logging.getLogger("pytest_ctxeval.models")

# What shapes an answer, and so goes into a cassette's key.  An allow-list:
# transport settings (api_base, api_key, timeout, headers) never get in.
SAMPLING_PARAMS = (
    "temperature",
    "response_format",
    "tool_choice",
    "max_tokens",
    "top_p",
    "seed",
    "stop",
)
_CALLS_LOCK = threading.Lock()  # evaluators call from several threads
# The pause between attempts; a module attribute, so tests read the waits.
wait_before_retry = time.sleep
MAX_RETRY_AFTER_S = 60.0


@dataclass
class _Asked:
    """One distinct request of this run: asked once, its answer shared."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    completion: Completion | None = None


@dataclass
class ModelClient:
    model: str
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout_s: float = 120.0
    max_attempts: int = 4
    backoff_s: float = 1.0
    # The longest answer asked of a real model: a looping small model would
    # otherwise generate until its context is full.  None = the server's own.
    max_tokens: int | None = None
    # Seconds one call may take in all, retries and waits included: a server
    # that trickles bytes slips past per-read timeouts.  None = no deadline.
    deadline_s: float | None = None
    calls: int = 0
    # Record/replay of real-model calls; None = always call.  Mocks never use it.
    cassettes: CassetteStore | None = None
    # Every distinct request is asked once per run, whatever the record mode:
    # asking twice lets a nondeterministic server contradict itself (two
    # answers to one window), which would turn into a spurious verdict.
    _asked: dict[str, _Asked] = field(default_factory=dict, repr=False)
    _asked_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Whether calls are answered in this process, holding the GIL throughout:
    # then threads cannot overlap them, only add switching.
    in_process = False
    # --ctx-breaker: calls in a row that time out or cannot connect before
    # the rest fail at once (see faults); 0 = never.
    breaker_calls: int = BREAKER_CALLS
    health: ModelHealth = field(init=False, repr=False)

    def __post_init__(self) -> None:
        register_secret(self.api_key)
        self.health = ModelHealth(self.model, self.api_base, self.breaker_calls)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        context: CallContext | None = None,
        response_format: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> Completion:
        """``seed`` tells repeated asks of one request apart (``--ctx-repeat``):
        each seed is a distinct request, asked and recorded on its own."""
        litellm = get_litellm()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages if self.model.startswith("ctxeval/") else _on_the_wire(messages),
            "temperature": self.temperature,
            "timeout": self.timeout_s,
        }
        if tools:
            kwargs["tools"] = tools
        if response_format:
            # OpenAI structured output: {"type": "json_schema", "json_schema": {...}}.
            kwargs["response_format"] = response_format
        if seed is not None:
            kwargs["seed"] = seed
        if self.max_tokens is not None and not self.model.startswith("ctxeval/"):
            kwargs["max_tokens"] = self.max_tokens
        if self.api_base:
            kwargs["api_base"] = self.api_base
            # Local OpenAI-compatible servers want some key; a real one from
            # the environment still wins (a proxy may need it).
            if self.api_key or not os.environ.get("OPENAI_API_KEY"):
                kwargs["api_key"] = self.api_key or "sk-ctxeval-local"
        elif self.api_key:
            kwargs["api_key"] = self.api_key
        if not self.model.startswith("ctxeval/"):
            # The retries below are the only ones: the OpenAI SDK would otherwise
            # retry 429/5xx/timeouts on its own, multiplying attempts and latency.
            kwargs["max_retries"] = 0
        params = {k: kwargs[k] for k in SAMPLING_PARAMS if k in kwargs}
        request = build_request(self.model, kwargs["messages"], kwargs.get("tools"), params)
        key = request_hash(request)
        return self._once(key, lambda: self._ask(litellm, kwargs, key, request, context))

    def _once(self, key: str, ask: Callable[[], Completion]) -> Completion:
        """Identical requests (the `full` strategy's and the ground truth's)
        are asked once and share the answer."""
        with self._asked_lock:
            asked = self._asked.setdefault(key, _Asked())
        # Held while asking: a concurrent identical request waits for this answer.
        with asked.lock:
            if asked.completion is None:
                asked.completion = METER.metered(ask)
            return asked.completion

    def _ask(
        self,
        litellm: Any,
        kwargs: dict[str, Any],
        key: str,
        request: dict[str, Any],
        context: CallContext | None,
    ) -> Completion:
        cassette = self._cassette_lookup(key, request, context)
        if isinstance(cassette, Completion):
            return cassette
        started = time.perf_counter()
        if self.health.stop_line is not None:  # given up on: no call, no wait
            raise ModelError(self.health.stop_line, stop=True)
        try:
            response = self._retrying(litellm, kwargs, started)
        except ModelError as exc:
            if exc.unreached:
                self.health.unreachable()
            raise
        self.health.answered()
        completion = self._completion(response, time.perf_counter() - started)
        if not self.model.startswith("ctxeval/"):
            log_answer(logger, self.model, context or current_context(), completion)
        if cassette is not None and self.cassettes is not None:
            self.cassettes.save(cassette[0], cassette[1], cassette_response(completion))
        return completion

    def _retrying(self, litellm: Any, kwargs: dict[str, Any], started: float) -> Any:
        """The response, after retries with backoff; a ModelError once the
        call has failed for good."""
        deadline = None if self.deadline_s is None else started + self.deadline_s
        for attempt in range(1, self.max_attempts + 1):
            try:
                with _CALLS_LOCK:
                    self.calls += 1
                return call_within(deadline, litellm.completion, kwargs)
            except ModelError:
                raise
            except DeadlinePassed:
                raise ModelError(
                    f"Timeout: no answer within the {self.deadline_s:g} s deadline "
                    f"(attempt {attempt})",
                    unreached=True,
                ) from None
            except Exception as exc:  # litellm maps provider errors to its own types
                name = type(exc).__name__
                # `from None`: the provider's exception may quote a secret, and
                # a chained cause is printed unscrubbed in any traceback.
                stop = self.health.first_call_fault(exc)
                if stop is not None:  # the setup is wrong: no retry, no other item
                    said = f"{name}: {error_line(exc)}"
                    raise ModelError(f"{stop}. It said: {said}", stop=True) from None
                gone = unreached(exc)
                if not gone:  # the server answered, if only with an error
                    self.health.answered()
                # A missing key comes back as a 500 from some providers: it
                # will not get better by waiting.
                missing_key = "Missing credentials" in str(exc) or "api_key" in str(exc)
                if is_context_exceeded(exc):
                    raise ModelError(f"{name}: {error_line(exc)}", context_exceeded=True) from None
                if name not in RETRYABLE or missing_key:
                    raise ModelError(f"{name}: {error_line(exc)}") from None
                logger.warning(
                    "%s %s: %s, attempt %d of %d",
                    self.model,
                    call_label(),
                    name,
                    attempt,
                    self.max_attempts,
                )
                if attempt == self.max_attempts:
                    raise ModelError(
                        f"{name} after {attempt} attempts: {error_line(exc)}", unreached=gone
                    ) from None
                hint = retry_after_s(exc)
                if (
                    hint is not None
                    and deadline is not None
                    and time.perf_counter() + hint >= deadline
                ):
                    # Waiting part of it would only hold the run up: the
                    # server said when it will answer, and that is too late.
                    raise ModelError(
                        f"{name}: the server asks to retry after {hint:,.0f} s, past the "
                        f"{self.deadline_s:g} s deadline: {error_line(exc)}",
                        unreached=gone,
                    ) from None
                wait = (
                    min(hint, MAX_RETRY_AFTER_S)
                    if hint is not None
                    else self.backoff_s * 2 ** (attempt - 1)
                )
                if deadline is not None and time.perf_counter() + wait >= deadline:
                    raise ModelError(
                        f"{name}, and no time left for attempt {attempt + 1} within the "
                        f"{self.deadline_s:g} s deadline: {error_line(exc)}",
                        unreached=gone,
                    ) from None
                wait_before_retry(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _cassette_lookup(
        self, key: str, request: dict[str, Any], context: CallContext | None
    ) -> Completion | tuple[str, dict[str, Any]] | None:
        """A replayed Completion; or (key, request) to record after the call;
        or None when this call is not recorded (no store, or a mock model)."""
        if self.cassettes is None or self.model.startswith("ctxeval/"):
            return None
        try:
            stored = self.cassettes.load(key)
        except CassetteError as exc:
            raise ModelError(str(exc)) from None
        if stored is not None:
            return replayed(stored)
        if self.cassettes.mode == "none":
            raise ModelError(str(self.cassettes.miss(key, request, context or current_context())))
        return key, request

    def _completion(self, response: Any, latency: float) -> Completion:
        try:
            choice = response.choices[0]
            message = choice.message
        except (AttributeError, IndexError) as exc:
            raise ModelError(f"malformed response from {self.model}: no choices") from exc
        calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.function.name,
                    "arguments": call.function.arguments or "",
                },
            }
            for call in (message.tool_calls or [])
        ]
        usage = getattr(response, "usage", None)
        content, finish_reason = message.content, getattr(choice, "finish_reason", None)
        # The same checks as a replayed cassette's: what is scored live must
        # be what a cassette can hold.
        problem = response_problem(
            {"content": content, "tool_calls": calls, "finish_reason": finish_reason}
        )
        problem = problem or too_many_calls(calls)
        if problem is not None:
            raise ModelError(f"malformed response from {self.model}: {problem}")
        return Completion(
            content=_bounded(content),
            tool_calls=[_bounded_call(call) for call in calls],
            prompt_tokens=token_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=token_count(getattr(usage, "completion_tokens", 0)),
            cost_usd=self._cost(response),
            latency_s=latency,
            finish_reason=bounded_field(finish_reason),
        )

    def _cost(self, response: Any) -> float:
        if self.model.startswith("ctxeval/"):
            return 0.0
        try:
            return float(get_litellm().completion_cost(completion_response=response) or 0.0)
        except Exception:  # models missing from the bundled cost map cost "unknown" = 0
            return 0.0


def _on_the_wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`content: null` (an assistant turn that only calls tools) is valid
    OpenAI, but some OpenAI-compatible servers' chat templates (llama.cpp)
    fail on it with a 500; an empty string means the same everywhere."""
    return [{**m, "content": ""} if m.get("content") is None else m for m in messages]
