"""Strategies by name: built-ins, presets (``strategies/*.yaml``), ``module:Class``
and the entry-point group ``pytest_ctxeval.strategies``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from .base import ContextStrategy

ENTRY_POINT_GROUP = "pytest_ctxeval.strategies"

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

    def create(self) -> ContextStrategy:
        return self.factory(**self.params)


def _load_builtins() -> None:
    # Importing the modules runs their @register_strategy decorators.
    from . import (  # noqa: F401
        cache_hostile,
        compaction,
        full,
        headtail,
        observation_mask,
        rag,
        sliding,
        subagent,
        summarize,
        toolprune,
        truncate,
    )


def available(preset_dirs: Sequence[Path] | None = None) -> dict[str, StrategyFactory]:
    """Built-ins, entry points, then presets from ``preset_dirs`` (default:
    ``./strategies`` when it exists; ``[]`` for none).  A bad preset raises
    :class:`~.presets.PresetError` naming its file."""
    _load_builtins()
    found = dict(_BUILTINS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, _lazy_entry_point(ep))
    found.update(_presets(found, preset_dirs))
    return found


def _presets(
    kinds: dict[str, StrategyFactory], preset_dirs: Sequence[Path] | None
) -> dict[str, Any]:
    from .presets import default_preset_dirs, load_presets

    dirs = default_preset_dirs() if preset_dirs is None else list(preset_dirs)
    return load_presets(dirs, kinds) if dirs else {}


def _lazy_entry_point(ep: Any) -> StrategyFactory:
    def create(**params: Any) -> ContextStrategy:
        return ep.load()(**params)

    return create


def _import_object(spec: str, preset_dirs: Sequence[Path] = ()) -> StrategyFactory:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # ``strategies/`` at a project root is rarely on sys.path: look there too.
        module = _module_from_dirs(module_name, preset_dirs)
        if module is None:
            raise UnknownStrategyError(
                f"cannot import module {module_name!r} for {spec!r}: {exc}"
            ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UnknownStrategyError(f"module {module_name!r} has no attribute {attr!r}") from None


def _module_from_dirs(module_name: str, dirs: Sequence[Path]) -> Any:
    """``example_trim`` or ``strategies.example_trim`` as a file in a preset directory."""
    relative = Path(*module_name.split(".")).with_suffix(".py")
    for directory in dirs:
        for path in (directory / relative, directory.parent / relative):
            if path.is_file():
                spec = importlib.util.spec_from_file_location(module_name, path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module  # deepcopy and pickling look classes up here
                spec.loader.exec_module(module)
                return module
    return None


def resolve(
    names: str | list[str], preset_dirs: Sequence[Path] | None = None
) -> list[StrategySpec]:
    """Turn ``"headtail,sliding"``, ``"all"``, a preset name or ``"pkg.mod:Class"`` into specs.

    ``preset_dirs``: where presets live (the plugin passes ``<rootdir>/strategies``);
    default ``./strategies`` when it exists.  ``all`` means the built-ins only."""
    from .presets import PresetFactory, default_preset_dirs

    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    dirs = default_preset_dirs() if preset_dirs is None else list(preset_dirs)
    # Presets are read only when a name needs them: a broken preset file must
    # not break a run that does not use it.
    known = available(preset_dirs=[])
    if not all(n == "all" or ":" in n or n in known for n in names):
        known = available(dirs)
    specs: list[tuple[str, StrategySpec]] = []  # (as the user wrote it, the spec)
    for name in names:
        if name == "all":
            specs.extend(("all", StrategySpec(n, known[n])) for n in sorted(_BUILTINS))
        elif ":" in name:
            factory = _import_object(name, dirs)
            specs.append((name, StrategySpec(own_name(factory) or name, factory)))
        elif isinstance(found := known.get(name), PresetFactory):
            specs.append((name, StrategySpec(name, found.kind_factory, dict(found.preset.params))))
        elif found is not None:
            specs.append((name, StrategySpec(name, found)))
        else:
            raise UnknownStrategyError(
                f"unknown strategy {name!r}; known strategies: {', '.join(sorted(known))}, "
                "all, a preset in strategies/*.yaml, or module:Class"
            )
    return _distinct(specs)


def own_name(factory: StrategyFactory) -> str | None:
    """The ``name`` a class (or function) sets itself, not one it inherits: a
    subclass of ``HeadTailStrategy`` is not ``headtail``."""
    name = getattr(factory, "__dict__", {}).get("name")
    return name if isinstance(name, str) and name else None


def _distinct(specs: list[tuple[str, StrategySpec]]) -> list[StrategySpec]:
    """One spec per name; the same strategy named twice is kept once, two
    different strategies under one name are an error naming both."""
    unique: dict[str, tuple[str, StrategySpec]] = {}
    for written, spec in specs:
        if spec.name not in unique:
            unique[spec.name] = (written, spec)
            continue
        first_written, first = unique[spec.name]
        same = first.factory is spec.factory and first.params == spec.params
        if not same and written != first_written:
            raise StrategyNameClashError(
                f"{_as_written(first_written, first)} and {_as_written(written, spec)} are "
                f"different strategies with the same name {spec.name!r}; a module:Class "
                "strategy is named as written unless its class sets its own name"
            )
    return [spec for _, spec in unique.values()]


def _as_written(written: str, spec: StrategySpec) -> str:
    return f"{spec.name!r} (from 'all')" if written == "all" else repr(written)
