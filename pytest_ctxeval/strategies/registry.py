"""Strategies by name: built-ins, the entry-point group ``pytest_ctxeval.strategies``,
presets (shipped with the package, or a project's ``strategies/*.yaml``) and
``module:Class``; any of them with parameters, ``headtail(head=50,tail=50)``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ContextStrategy
from .lookup import Lookups, install
from .registration import (
    _BUILTINS,
    StrategyFactory,
    StrategyNameClashError,
    StrategySpec,
    UnknownStrategyError,
    register_strategy,
)

if TYPE_CHECKING:
    from .names import WrittenName

# The registration table moved to registration (the built-ins fill it without
# importing this module); its names are still imported from here.
__all__ = [
    "ENTRY_POINT_GROUP",
    "StrategyFactory",
    "StrategyNameClashError",
    "StrategySpec",
    "UnknownStrategyError",
    "register_strategy",
]

ENTRY_POINT_GROUP = "pytest_ctxeval.strategies"

# Built-ins that ``all`` leaves out: they are nothing without their parameters.
# ``recorded`` needs a scenario imported from traces.
_NOT_IN_ALL = frozenset({"pipeline", "recorded"})


def _load_builtins() -> None:
    # Importing the modules runs their @register_strategy decorators.
    from . import (  # noqa: F401
        cache_hostile,
        compaction,
        full,
        headtail,
        observation_mask,
        pipeline,
        rag,
        recorded,
        sliding,
        subagent,
        summarize,
        toolprune,
        truncate,
    )


def builtin_strategies() -> dict[str, StrategyFactory]:
    """The strategies this package defines, by name."""
    _load_builtins()
    return dict(_BUILTINS)


def adapter_kinds() -> dict[str, StrategyFactory]:
    """The adapters (``langchain-trim``...), each imported only when built."""
    from ..adapters import ADAPTERS

    return {kind: AdapterFactory(kind) for kind in ADAPTERS}


def strategy_kinds() -> dict[str, StrategyFactory]:
    """Built-ins, adapters, then installed entry points: every strategy a preset
    can name as its ``kind``."""
    found = builtin_strategies()
    found.update(adapter_kinds())
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, EntryPointFactory(ep))
    return found


def available(preset_dirs: Sequence[Path] | None = None) -> dict[str, StrategyFactory]:
    """Every usable name: built-ins, entry points, the shipped presets, then the
    project's presets from ``preset_dirs`` (default: ``./strategies`` when it
    exists; ``[]`` for none), which replace shipped presets of the same name.
    A bad preset raises :class:`~.presets.PresetError` naming its file."""
    from .presets import shipped_presets

    found = strategy_kinds()
    for name, preset in shipped_presets().items():
        found.setdefault(name, preset)
    found.update(_project_presets(found, preset_dirs))
    return found


def _project_presets(
    known: dict[str, StrategyFactory], preset_dirs: Sequence[Path] | None
) -> dict[str, Any]:
    from .presets import default_preset_dirs, load_presets

    dirs = default_preset_dirs() if preset_dirs is None else list(preset_dirs)
    return load_presets(dirs, known) if dirs else {}


@dataclass(frozen=True)
class EntryPointFactory:
    """An installed strategy, imported only when it is built or its parameters
    are checked: listing names must not import every plugin."""

    entry_point: Any

    def __call__(self, **params: Any) -> ContextStrategy:
        return self.load_target()(**params)  # type: ignore[no-any-return]

    def load_target(self) -> Any:
        return self.entry_point.load()


@dataclass(frozen=True)
class AdapterFactory:
    """An adapter kind: its module (not its library) is imported when it is
    built or its parameters are checked; the library when it is built."""

    kind: str

    @property
    def description(self) -> str:
        from ..adapters import ADAPTERS

        return ADAPTERS[self.kind].description

    def __call__(self, **params: Any) -> ContextStrategy:
        return self.load_target()(**params)  # type: ignore[no-any-return]

    def check_library(self) -> None:
        """One usage error naming the extra when the library is not installed."""
        from ..adapters import ADAPTERS, require

        require(ADAPTERS[self.kind].library, self.kind)

    def load_target(self) -> Any:
        from ..adapters import ADAPTERS

        adapter = ADAPTERS[self.kind]
        return getattr(importlib.import_module(adapter.module), adapter.attr)


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
        target: Callable[..., ContextStrategy] = getattr(module, attr)
        return target
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
    """Turn ``"headtail,sliding"``, ``"all"``, a preset name, ``"pkg.mod:Class"``
    or any of these with parameters, ``"headtail(head=50,tail=50)"``, into specs.

    ``preset_dirs``: where the project's presets live (the plugin passes
    ``<rootdir>/strategies``); default ``./strategies`` when it exists.  The
    shipped presets are always known.  ``all`` means the built-ins only.  A
    strategy given parameters is named ``headtail[head:50+tail:50]`` (see
    :mod:`.names`).  Names joined by ``+``, ``toolprune+compaction-cached``,
    are one pipeline of those stages (see :mod:`.pipeline`)."""
    from .names import parse_name, split_names, split_stages
    from .presets import default_preset_dirs

    texts = [names] if isinstance(names, str) else names
    entries = [
        [parse_name(stage) for stage in split_stages(part)]
        for text in texts
        for part in split_names(text)
    ]
    written = [stage for entry in entries for stage in entry]
    dirs = default_preset_dirs() if preset_dirs is None else list(preset_dirs)
    # The project's presets are read only when a name needs them: a broken
    # preset file must not break a run that does not use it.  A shipped
    # preset's name needs them too: the project may replace it.
    known = strategy_kinds()
    if not all(w.base == "all" or ":" in w.base or w.base in known for w in written):
        known = available(dirs)
    specs: list[tuple[str, StrategySpec]] = []  # (as the user wrote it, the spec)
    for entry in entries:
        if len(entry) > 1:
            pipeline = _pipeline_spec(entry, known, dirs)
            specs.append(("+".join(stage.written for stage in entry), pipeline))
            continue
        specs.extend((entry[0].written, spec) for spec in _specs(entry[0], known, dirs))
    return _distinct(specs)


def _pipeline_spec(
    stages: list[WrittenName], known: dict[str, StrategyFactory], dirs: Sequence[Path]
) -> StrategySpec:
    """``toolprune+compaction-cached``: each stage resolved as a name of its own."""
    from .params import StrategyParamError
    from .pipeline import PipelineFactory

    written = "+".join(stage.written for stage in stages)
    parts: list[StrategySpec] = []
    for stage in stages:
        if stage.base == "all":
            raise UnknownStrategyError(f"{written!r}: 'all' cannot be a pipeline stage")
        parts.extend(_specs(stage, known, dirs))
    factory = PipelineFactory(tuple(parts))
    try:
        factory()  # the order of the stages is checked before anything runs
    except ValueError as exc:
        raise StrategyParamError(f"{written!r}: {exc}") from None
    ref = "+".join(part.resolvable for part in parts) if any(p.ref for p in parts) else ""
    return StrategySpec("+".join(part.name for part in parts), factory, ref=ref)


def _specs(
    name: WrittenName, known: dict[str, StrategyFactory], dirs: Sequence[Path]
) -> list[StrategySpec]:
    from .params import did_you_mean
    from .presets import PresetFactory

    if name.base == "all":
        if name.params:
            raise UnknownStrategyError(
                f"{name.written!r}: 'all' takes no parameters; give them to one strategy, "
                "as in headtail(head=50,tail=50)"
            )
        return [StrategySpec(n, known[n]) for n in sorted(_BUILTINS) if n not in _NOT_IN_ALL]
    if ":" in name.base:
        factory = _import_object(name.base, dirs)
        shown = own_name(factory) or name.base
        params = _checked(f"strategy {shown!r}", factory, name)
        ref = _display(name.base, factory, params) if shown != name.base else ""
        return [StrategySpec(_display(shown, factory, params), factory, params, ref)]
    found = known.get(name.base)
    for kind in (found, getattr(found, "kind_factory", None)):
        if isinstance(kind, AdapterFactory):
            kind.check_library()
    if isinstance(found, PresetFactory):
        preset = dict(found.preset.params)
        merged = _checked(f"preset {name.base!r}", found.kind_factory, name, base=preset)
        given = {k: merged[k] for k in name.params}
        return [
            StrategySpec(_display(name.base, found.kind_factory, given), found.kind_factory, merged)
        ]
    if found is not None:
        params = _checked(f"strategy {name.base!r}", found, name)
        return [StrategySpec(_display(name.base, found, params), found, params)]
    raise UnknownStrategyError(
        f"unknown strategy {name.base!r}{did_you_mean(name.base, [*known, 'all'])}; "
        f"known strategies: {', '.join(sorted(known))}, "
        "all, a preset in strategies/*.yaml, or module:Class"
    )


def _checked(
    owner: str,
    factory: StrategyFactory,
    name: WrittenName,
    base: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters written with ``name`` (over a preset's ``base``), checked."""
    if not name.params:
        return dict(base or {})
    from .params import check_params

    return check_params(owner, factory, {**(base or {}), **name.params}, name.texts)


def _display(name: str, factory: StrategyFactory, params: dict[str, Any]) -> str:
    """``name[k:v+...]`` with the parameters in the order the strategy declares them,
    so the same parameters written in another order are the same strategy."""
    from .names import display_name
    from .params import accepted_params

    if not params:
        return name
    order = accepted_params(factory) or []
    ranked = sorted(params, key=lambda k: order.index(k) if k in order else len(order))
    return display_name(name, {k: params[k] for k in ranked})


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


# The composites look names up through lookup.py, not by importing this module.
install(Lookups(builtin_strategies, strategy_kinds, available))
