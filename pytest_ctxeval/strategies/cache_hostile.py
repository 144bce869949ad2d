"""``cache-hostile``: a negative control for the prompt-cache metric.

It wraps another strategy (``full`` by default) and appends the current time
to the system prompt, as agents that "tell the model the date" often do.  The
first message changes on every call, so nothing after the system prompt's own
text can come from a provider's prompt cache, whatever the wrapped strategy
keeps stable.  The prompt itself stays first and unaltered, as every strategy's
must.  The clock is a counter (one second per call from a fixed start), so
runs repeat exactly.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

from .base import BaseStrategy, Message, StrategyContext, Window, split_system
from .registration import register_strategy

CLOCK_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
TIME_LINE = "Current time: {now}"


class FakeClock:
    """Ticks one step per reading: deterministic, unlike ``datetime.now()``."""

    def __init__(self, start: datetime = CLOCK_START, step: timedelta = timedelta(seconds=1)):
        self.start = start
        self.step = step
        self.readings = 0

    def now(self) -> datetime:
        self.readings += 1
        return self.start + self.step * self.readings


@register_strategy("cache-hostile")
class CacheHostileStrategy(BaseStrategy):
    name = "cache-hostile"
    description = (
        "Negative control: a timestamp that changes every call at the top of the system prompt."
    )

    def __init__(self, inner: str = "full", inner_params: dict[str, Any] | None = None) -> None:
        super().__init__()
        from .lookup import available

        known = available(preset_dirs=[])
        if inner not in known or inner == self.name:
            raise ValueError(f"cache-hostile: unknown inner strategy {inner!r}")
        self.inner_name = inner
        self.inner_params = dict(inner_params or {})
        self.inner = known[inner](**self.inner_params)
        self.clock = FakeClock()

    def params(self) -> dict[str, Any]:
        return {"inner": self.inner_name, "inner_params": copy.deepcopy(self.inner_params)}

    def setup(self, ctx: StrategyContext) -> None:
        super().setup(ctx)
        setup = getattr(self.inner, "setup", None)
        if callable(setup):
            setup(ctx)

    def add(self, message: Message) -> None:
        super().add(message)
        self.inner.add(message)

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        revise = getattr(self.inner, "revise", None)
        if callable(revise):
            revise(index, message)

    def end_session(self) -> None:
        super().end_session()
        end = getattr(self.inner, "end_session", None)
        if callable(end):
            end()

    def window(self) -> Window:
        window = self.inner.window()
        stamp = TIME_LINE.format(now=self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
        system, rest = split_system(window.messages)
        if system:
            first = system[0]
            system = [{**first, "content": f"{first.get('content') or ''}\n\n{stamp}"}, *system[1:]]
        else:
            system = [{"role": "system", "content": stamp}]
        window.messages = system + rest
        return window
