"""``load_strategy``: a strategy from the text ``--ctx-strategy`` takes, for a
team's own Python tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .base import ContextStrategy, StrategyContext


def load_strategy(
    spec: str,
    *,
    preset_dirs: list[Path] | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> ContextStrategy:
    """A fresh strategy built from ``spec``, exactly as the command line reads it.

    ``spec`` is one name: a built-in (``sliding``), a preset (``sliding-8``),
    an adapter (``langchain-trim``), ``module:Class``, a pipeline
    (``toolprune+compaction-cached``), any of them with parameters
    (``"langchain-trim(max_tokens=2000)"``).  ``preset_dirs``: where the
    project's presets live (default ``./strategies`` when it exists).  The
    strategy is set up with ``count_tokens`` (default: the tokenizer a run on
    the mock model counts with) and no model, so a strategy that calls one needs the harness.
    Feed it with ``add(message)`` and read ``window()``.  A bad name or
    parameter raises :class:`~pytest_ctxeval.strategies.UnknownStrategyError`
    with the same message the command line prints."""
    from .registry import UnknownStrategyError, resolve

    specs = resolve(spec, preset_dirs)
    if len(specs) != 1:
        raise UnknownStrategyError(
            f"{spec!r} names {len(specs)} strategies; load_strategy builds one"
        )
    strategy = specs[0].create()
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        from ..llm.tokens import count_text_tokens

        setup(StrategyContext(count_tokens=count_tokens or count_text_tokens))
    return strategy
