"""A strategy written as an author would, against the package's exports.

`.ci/run` type-checks this file with `mypy --strict`: if an export were
untyped (Any), the functions below would return Any and strict mode would
reject them, so the public API stays typed.
"""

from __future__ import annotations

from pytest_ctxeval import (
    BaseStrategy,
    ContextStrategy,
    Message,
    StrategyContext,
    Window,
    check_invariants,
    content_text,
    load_strategy,
)


class KeepAll(BaseStrategy):
    name = "keep-all"

    def setup(self, ctx: StrategyContext) -> None:
        super().setup(ctx)
        self.budget = ctx.count_tokens("budget") * 1000

    def window(self) -> Window:
        return Window(messages=list(self.history))


def texts(messages: list[Message]) -> list[str]:
    return [content_text(m) for m in messages]


def as_protocol() -> ContextStrategy:
    return KeepAll()


def problems() -> list[str]:
    return check_invariants(KeepAll)


def team_window(messages: list[Message]) -> list[Message]:
    """A team's own test drives a strategy named as on the command line."""
    strategy = load_strategy("langchain-trim(max_tokens=2000)")
    for message in messages:
        strategy.add(message)
    return strategy.window().messages
