"""The table the built-in strategies register in (``@register_strategy``),
the spec of a named strategy, and the errors of names: below both the
built-ins and the registry that imports them and reads the table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .base import ContextStrategy

StrategyFactory = Callable[..., ContextStrategy]

_BUILTINS: dict[str, StrategyFactory] = {}


class UnknownStrategyError(ValueError):
    """A strategy name that resolves to nothing."""


class StrategyNameClashError(UnknownStrategyError):
    """Two different strategies resolve to one name: results would merge them.

    An UnknownStrategyError, so whoever reports bad strategy names reports this too."""


def register_strategy(name: str) -> Callable[[StrategyFactory], StrategyFactory]:
    """Class decorator: make a strategy available under ``name``."""

    def decorate(factory: StrategyFactory) -> StrategyFactory:
        _BUILTINS[name] = factory
        return factory

    return decorate


@dataclass(frozen=True)
class StrategySpec:
    """A named, parameterised way to build fresh strategy instances."""

    name: str
    factory: StrategyFactory
    params: dict[str, Any] = field(default_factory=dict)
    # A name ``resolve`` turns back into this strategy, where ``name`` is not
    # one: a module:Class whose class names itself (``last-only``).
    ref: str = ""

    def create(self) -> ContextStrategy:
        return self.factory(**self.params)

    @property
    def resolvable(self) -> str:
        """A name --ctx-strategy and ``ctxeval show --strategy`` accept for it."""
        return self.ref or self.name
