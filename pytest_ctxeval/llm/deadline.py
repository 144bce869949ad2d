"""A blocking call given up when its deadline passes."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any


class DeadlinePassed(TimeoutError):
    """No answer came before the deadline."""


def call_within(deadline: float | None, call: Any, kwargs: dict[str, Any]) -> Any:
    """``call(**kwargs)``, given up (DeadlinePassed) when ``deadline``
    (a ``time.perf_counter()`` value) passes.

    The call runs in a daemon thread: a blocking HTTP read cannot be
    interrupted, so on time-out it is abandoned (and dies with its socket or
    the process) while the item goes on as an error.  Nothing joins it at
    exit, so Ctrl-C in the waiting thread does not wait for it either."""
    if deadline is None:
        return call(**kwargs)
    outcome: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def run() -> None:
        try:
            outcome.put((True, call(**kwargs)))
        except BaseException as exc:  # handed to the waiting thread
            outcome.put((False, exc))

    threading.Thread(target=run, name="ctxeval-call", daemon=True).start()
    try:
        ok, value = outcome.get(timeout=max(deadline - time.perf_counter(), 0.0))
    except queue.Empty:
        raise DeadlinePassed() from None
    if ok:
        return value
    raise value
