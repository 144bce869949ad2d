"""``recorded``: the window production really sent, replayed from its trace.

A scenario imported from traces (``ctxeval import otel ...``) carries, per
model call, the window the traced application sent (see
``recorded_windows``).  This strategy returns exactly that window, messages
and tools as they were sent, so a team measures the context policy it
shipped without reimplementing it: ``recorded`` beside ``full`` shows
production's own context losses, beside another strategy what a change would
do on real traffic.  Where the trace holds no window for a call, it says so
(the item is an error with that reason): it never makes one up."""

from __future__ import annotations

import copy

from .base import BaseStrategy, Window
from .registration import register_strategy


class NoRecordedWindow(LookupError):
    """The trace holds no window for this model call."""

    def __str__(self) -> str:
        return str(self.args[0])


@register_strategy("recorded")
class RecordedStrategy(BaseStrategy):
    name = "recorded"
    description = "The window production sent at each call, from the imported trace."

    def end_session(self) -> None:
        """The recorded windows count the messages of every chat so far."""

    def window(self) -> Window:
        recorded = self.ctx.recorded if self.ctx is not None else None
        if recorded is None:
            raise NoRecordedWindow(
                "this scenario has no recorded windows (a 'recorded_windows' file, written "
                "by `ctxeval import otel|openinference|phoenix|langfuse|langsmith`)"
            )
        at = sum(1 for m in self.history if m.get("role") != "system")
        found = recorded.get(at)
        if found is None:
            kept = ", ".join(str(n) for n in sorted(recorded)) or "none"
            raise NoRecordedWindow(
                f"the trace holds no window production sent at message {at} of the session "
                f"(no chat span recorded its input there); recorded at messages: {kept}"
            )
        # Copies: whatever the harness does with the window leaves the record as it was.
        return Window(messages=copy.deepcopy(found.messages), tools=copy.deepcopy(found.tools))
