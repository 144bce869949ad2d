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
import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

from ..messages import identical_prefix_length
from .base import BaseStrategy, Message, StrategyContext, Window
from .registration import register_strategy
from .unchanged_prefix import lent_window_of, tracks_unchanged_prefix, unchanged_prefix_of

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
@tracks_unchanged_prefix
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
        # The window as last sent (lent_window), and where the wrapped
        # window's messages start in it: after its own system prompt or not.
        self._sent: list[Message] = []
        self._start = 0
        # Of the window built last, as the replay reads it (see unchanged_prefix).
        self.unchanged_prefix: int | None = None
        self.unchanged_after_first: int | None = None

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

    def stamp(self) -> str:
        """The line added to the system prompt: the time of this call."""
        return TIME_LINE.format(now=self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ"))

    def window(self) -> Window:
        window = self.lent_window()
        return dataclasses.replace(
            window, messages=list(window.messages), retrievable=list(window.retrievable)
        )

    def lent_window(self) -> Window:
        """``window()``, whose message list is this strategy's own: valid
        until the next call, which changes it in place (see lent_window_of).
        Only the first message is new each time; what follows it is the
        wrapped strategy's window, copied over where that one changed."""
        window: Window = lent_window_of(self.inner)[0]
        unchanged = unchanged_prefix_of(self.inner)
        stamp = self.stamp()
        messages = window.messages
        # The wrapped window's own system prompt is stamped; without one, a stamp comes first.
        start = 1 if messages and messages[0].get("role") == "system" else 0
        if start:
            first = messages[0]
            head = {**first, "content": f"{first.get('content') or ''}\n\n{stamp}"}
        else:
            head = {"role": "system", "content": stamp}
        sent = self._sent
        if unchanged is None or start != self._start:  # not known: compared
            keep = identical_prefix_length(sent[1:], messages[start:])
        else:  # the wrapped messages the wrapped strategy kept in place
            keep = max(unchanged - start, 0)
        if sent:
            sent[0] = head
        else:
            sent.append(head)
        del sent[1 + keep :]
        sent.extend(messages[start + keep :])
        self.unchanged_after_first = keep
        self._start = start
        self.unchanged_prefix = 0  # the stamp is new every time
        return dataclasses.replace(window, messages=sent)
