"""This process's model calls, counted as they start and end: what the live
progress line shows (made, in flight, tokens, cost), and the numbering of the
per-call log (``call 12/40 [3f9a2c]``).

A call is one distinct request asked (identical requests share one answer,
see client.ModelClient._once).  The total is the calls planned so far: the
evaluator plans a scenario's answers and ground truths when its first item
runs; a judge's or a rollout's calls are not planned, so past the total a
call is numbered alone.  The id is random, so the lines of calls that
overlap (threads, xdist workers) can be told apart."""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from .cassettes import CallContext


class Answer(Protocol):
    """What the meter reads of a call's completion (client.Completion)."""

    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float


_A = TypeVar("_A", bound=Answer)


@dataclass(frozen=True)
class CallCounts:
    started: int = 0
    finished: int = 0
    planned: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    @property
    def in_flight(self) -> int:
        return self.started - self.finished

    def as_dict(self) -> dict[str, float]:
        return {
            "started": self.started,
            "finished": self.finished,
            "planned": self.planned,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, data: dict[str, float]) -> CallCounts:
        return cls(
            started=int(data.get("started", 0)),
            finished=int(data.get("finished", 0)),
            planned=int(data.get("planned", 0)),
            tokens=int(data.get("tokens", 0)),
            cost_usd=float(data.get("cost_usd", 0.0)),
        )

    def __add__(self, other: CallCounts) -> CallCounts:
        return CallCounts(
            self.started + other.started,
            self.finished + other.finished,
            self.planned + other.planned,
            self.tokens + other.tokens,
            self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True)
class CallTicket:
    number: int
    planned: int
    id: str

    def label(self) -> str:
        """``call 12/40 [3f9a2c]``; ``call 41 [...]`` past the planned total."""
        total = f"/{self.planned}" if 0 < self.number <= self.planned else ""
        return f"call {self.number}{total} [{self.id}]"


class CallMeter:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # evaluators call from several threads
        self._counts = CallCounts()
        self._current = threading.local()

    def reset(self) -> None:
        """A new run (pytester runs several in one process) counts from zero."""
        with self._lock:
            self._counts = CallCounts()

    def plan(self, calls: int) -> None:
        with self._lock:
            self._counts = replace(self._counts, planned=self._counts.planned + calls)

    def counts(self) -> CallCounts:
        with self._lock:
            return self._counts

    def metered(self, ask: Callable[[], _A]) -> _A:
        """``ask()``, counted; while it runs, ``current()`` is its ticket."""
        with self._lock:
            c = self._counts = replace(self._counts, started=self._counts.started + 1)
            ticket = CallTicket(c.started, c.planned, secrets.token_hex(3))
        completion = None
        try:
            with self._holding(ticket):
                completion = ask()
            return completion
        finally:
            tokens = completion.prompt_tokens + completion.completion_tokens if completion else 0
            cost = completion.cost_usd if completion else 0.0
            with self._lock:
                c = self._counts
                self._counts = replace(
                    c, finished=c.finished + 1, tokens=c.tokens + tokens, cost_usd=c.cost_usd + cost
                )

    def current(self) -> CallTicket | None:
        """The ticket of the call this thread is making, if any."""
        ticket: CallTicket | None = getattr(self._current, "ticket", None)
        return ticket

    @contextmanager
    def _holding(self, ticket: CallTicket) -> Iterator[None]:
        self._current.ticket = ticket
        try:
            yield
        finally:
            self._current.ticket = None


METER = CallMeter()


def call_label() -> str:
    """This thread's call as the log names it; ``call`` outside a metered call."""
    ticket = METER.current()
    return ticket.label() if ticket is not None else "call"


def log_answer(
    logger: logging.Logger, model: str, context: CallContext | None, completion: Answer
) -> None:
    """The per-call log line (``pytest --log-cli-level=INFO`` shows it live)."""
    logger.info(
        "%s %s (%s): %d prompt + %d completion tokens in %.1f s",
        model,
        call_label(),
        context.describe() if context is not None else "no scenario",
        completion.prompt_tokens,
        completion.completion_tokens,
        completion.latency_s,
    )
