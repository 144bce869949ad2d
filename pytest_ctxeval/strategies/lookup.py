"""The names the composite strategies look up: a pipeline's stages,
cache-hostile's inner strategy, the kinds the shipped presets name.

The registry lists the built-ins by importing them, so a built-in that
imported the registry back would close a circle.  Instead the registry
installs its lookups here when it is imported (the package imports it first,
so it is in place before any built-in runs) and the arrows point one way:
registry -> built-ins -> lookup."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .registration import StrategyFactory

Names = dict[str, StrategyFactory]


@dataclass(frozen=True)
class Lookups:
    """The registry's answers, handed in by the registry."""

    builtins: Callable[[], Names]
    kinds: Callable[[], Names]
    available: Callable[[Sequence[Path] | None], Names]


_installed: list[Lookups] = []


def install(lookups: Lookups) -> None:
    _installed[:] = [lookups]


def _lookups() -> Lookups:
    if not _installed:  # only when this module is loaded outside its package
        raise RuntimeError("the strategy registry is not loaded: import pytest_ctxeval.strategies")
    return _installed[0]


def builtin_strategies() -> Names:
    """The strategies this package defines, by name."""
    return _lookups().builtins()


def strategy_kinds() -> Names:
    """Built-ins, adapters and installed entry points."""
    return _lookups().kinds()


def available(preset_dirs: Sequence[Path] | None = None) -> Names:
    """Every usable name, presets included (see the registry's ``available``)."""
    return _lookups().available(preset_dirs)
