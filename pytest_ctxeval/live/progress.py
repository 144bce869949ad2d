"""The progress line and when a plain one is due.

``ctxeval: 12/40 items, 30 model calls (2 in flight), 45,210 tokens,
$0.0123, elapsed 1m05s, ETA 3m20s``.  The ETA is the time per finished item
so far times the items left; no ETA before the first item ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..llm.call_meter import CallCounts


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    calls: CallCounts
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        if self.done <= 0 or self.total <= self.done:
            return None if self.done <= 0 else 0.0
        return self.elapsed_s / self.done * (self.total - self.done)


def progress_line(progress: Progress) -> str:
    calls = progress.calls
    eta = progress.eta_s
    return (
        f"ctxeval: {progress.done}/{progress.total} items, "
        f"{calls.finished:,} model calls ({calls.in_flight:,} in flight), "
        f"{calls.tokens:,} tokens, ${calls.cost_usd:.4f}, "
        f"elapsed {duration(progress.elapsed_s)}, "
        f"ETA {'-' if eta is None else duration(eta)}"
    )


def duration(seconds: float) -> str:
    """``7s``, ``1m05s``, ``2h03m``."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Pacer:
    """Whether a plain line is due: ``every`` seconds since the last one (or
    the start); 0 = at every item.  The clock is given, so tests need no sleep."""

    def __init__(self, every: float, clock: Callable[[], float]) -> None:
        self.every = every
        self.clock = clock
        self.last = clock()

    def due(self) -> bool:
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            return True
        return False
