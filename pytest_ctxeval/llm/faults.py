"""When to stop asking a model: faults that no retry and no other item can
fix, and a circuit breaker for a server that stopped answering.

Both are kept per client, that is per model and per process (under xdist,
per worker): a client shared by every item of the run is where a broken
model shows first.

- A model that is not found (404), a key that is refused (401, 403) or a
  port nothing listens on, before the model has answered once: the setup is
  wrong, and every later item would fail the same way after its retries.
  The client is ``broken``: every later call fails at once with one line
  naming the model, its base URL and what to check, and the plugin stops
  the run after the item that found it.
- After ``limit`` calls in a row that timed out or could not connect (a
  server that accepts and never answers, or went away mid-run), the breaker
  opens: every later call fails at once with one line, so each remaining
  item gets its ``error`` record in no time and the run ends with its report.
  Any answer, even an error the server sent, closes the count again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# Calls in a row that timed out or could not connect before the rest fail at
# once (--ctx-breaker): a few, so that one slow answer is not enough, and a
# dead server costs a few deadlines, not one per item.
BREAKER_CALLS = 3
# Error types of litellm (and the OpenAI SDK) that mean the server was not
# reached or did not answer in time.
_UNREACHED = ("APIConnectionError", "Timeout", "APITimeoutError")
# Further down an exception's chain: the transport's own words for the same.
_UNREACHED_CAUSES = (
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "RemoteProtocolError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "TimeoutError",
)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 12 and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def refused(exc: BaseException) -> bool:
    """Nothing listens at the address (litellm reports it as a 500)."""
    return any(type(link).__name__ == "ConnectionRefusedError" for link in _chain(exc))


def unreached(exc: BaseException) -> bool:
    """The call timed out or never got through to the server."""
    if type(exc).__name__ in _UNREACHED:
        return True
    return any(type(link).__name__ in _UNREACHED_CAUSES for link in _chain(exc)[1:])


def setup_fault(exc: BaseException) -> str | None:
    """What to check when ``exc`` says the run's setup is wrong (the model's
    name, the key, the address), or None for a fault of this one call."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if name == "NotFoundError" or status == 404:
        return (
            "model not found; check the --ctx-model name against the models the server "
            "offers (GET /models) and that --ctx-api-base is the server's base URL"
        )
    if name in ("AuthenticationError", "PermissionDeniedError") or status in (401, 403):
        return (
            "the server refused the API key; check the key in the environment "
            "(OPENAI_API_KEY, or the provider's own variable) for this server"
        )
    if refused(exc):
        return (
            "connection refused; check that the model server is running "
            "and that --ctx-api-base names its address and port"
        )
    return None


@dataclass
class ModelHealth:
    """What one client's calls have shown of its model so far."""

    model: str
    api_base: str | None = None
    # --ctx-breaker; 0 = never open.
    limit: int = BREAKER_CALLS
    # The line every later call fails with, once the model is given up on.
    stop_line: str | None = None
    # The setup is wrong (not found, refused key, closed port): stop the run.
    broken: bool = False
    _answered: bool = False
    _streak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def where(self) -> str:
        return f"{self.model} at {self.api_base or 'its provider default base URL'}"

    def first_call_fault(self, exc: BaseException) -> str | None:
        """The one line to stop the run with when ``exc`` came before any
        answer and says the setup is wrong; None otherwise (the caller goes
        on as for any other fault)."""
        with self._lock:
            if self._answered:
                return None
            advice = setup_fault(exc)
            if advice is None:
                return None
            if self.stop_line is None:
                self.broken = True
                self.stop_line = f"{self.where}: {advice}"
            return self.stop_line

    def answered(self) -> None:
        """The server answered (with anything, an error included)."""
        with self._lock:
            self._answered = True
            self._streak = 0

    def unreachable(self) -> None:
        """A call ended timed out or unable to connect, after its retries."""
        with self._lock:
            self._streak += 1
            if self.limit and self._streak >= self.limit and self.stop_line is None:
                self.stop_line = (
                    f"{self.where}: {self._streak} calls in a row timed out or could not "
                    "connect, so the remaining calls to it fail at once; check that the "
                    "server is up and answering (--ctx-timeout bounds each call, "
                    "--ctx-breaker sets how many calls in a row)"
                )
