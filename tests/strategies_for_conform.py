"""Strategies ``tests/test_conform.py`` checks: one that breaks tool pairs,
one that raises."""

from __future__ import annotations

from pytest_ctxeval.strategies.base import BaseStrategy, Window


class DropsToolCalls(BaseStrategy):
    """Sends everything but the assistant messages that make tool calls."""

    name = "drops-tool-calls"

    def window(self) -> Window:
        last = self.history[-1]
        kept = [m for m in self.history[:-1] if not m.get("tool_calls")]
        return Window(messages=[*kept, last])


class Raises(BaseStrategy):
    name = "raises"

    def window(self) -> Window:
        raise RuntimeError("no window today")
