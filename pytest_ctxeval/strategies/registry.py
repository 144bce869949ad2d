"""Strategies by name: built-ins, ``module:Class`` and the entry-point group."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from .base import ContextStrategy

ENTRY_POINT_GROUP = "pytest_ctxeval.strategies"

StrategyFactory = Callable[..., ContextStrategy]

_BUILTINS: dict[str, StrategyFactory] = {}


class UnknownStrategyError(ValueError):
    """A strategy name that resolves to nothing."""


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

    def create(self) -> ContextStrategy:
        return self.factory(**self.params)


def _load_builtins() -> None:
    # Importing the modules runs their @register_strategy decorators.
    from . import full, headtail, sliding, truncate  # noqa: F401


def available() -> dict[str, StrategyFactory]:
    _load_builtins()
    found = dict(_BUILTINS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, _lazy_entry_point(ep))
    return found


def _lazy_entry_point(ep: Any) -> StrategyFactory:
    def create(**params: Any) -> ContextStrategy:
        return ep.load()(**params)

    return create


def _import_object(spec: str) -> StrategyFactory:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownStrategyError(f"cannot import module {module_name!r} for {spec!r}: {exc}")
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UnknownStrategyError(f"module {module_name!r} has no attribute {attr!r}") from None


def resolve(names: str | list[str]) -> list[StrategySpec]:
    """Turn ``"headtail,sliding"``, ``"all"`` or ``"pkg.mod:Class"`` into specs."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    known = available()
    specs: list[StrategySpec] = []
    for name in names:
        if name == "all":
            specs.extend(StrategySpec(n, known[n]) for n in sorted(_BUILTINS))
        elif ":" in name:
            factory = _import_object(name)
            specs.append(StrategySpec(getattr(factory, "name", None) or name, factory))
        elif name in known:
            specs.append(StrategySpec(name, known[name]))
        else:
            raise UnknownStrategyError(
                f"unknown strategy {name!r}; known strategies: {', '.join(sorted(known))}, "
                "all, or module:Class"
            )
    unique: dict[str, StrategySpec] = {}
    for spec in specs:
        unique.setdefault(spec.name, spec)
    return list(unique.values())
