"""Strategy presets: a YAML file gives a name to a kind plus parameters.

```yaml
name: sliding-8
kind: sliding
params: {turns: 8}
description: The last 8 turns.
```

Presets come from two places.  The package ships some (``shipped_presets/``
next to this module), and a project adds its own in ``strategies/*.yaml`` at
its root.  A project's preset of the same name as a shipped one replaces it
(the project chose its parameters; an upgrade that ships a new preset never
changes a project's runs), and records the replaced file in ``replaces``.  A
preset may not take the name of a strategy, and two of a project's presets may
not share a name.

A preset is checked when it is loaded: unknown keys, an unknown kind or
parameters the kind rejects are errors that name the file.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .base import ContextStrategy
from .params import StrategyParamError, check_params, did_you_mean
from .registration import UnknownStrategyError

PRESET_DIR = "strategies"
PRESET_SUFFIXES = (".yaml", ".yml")
# The presets the package ships, as package data.
SHIPPED_PRESET_DIR = Path(__file__).resolve().parent / "shipped_presets"


class PresetError(UnknownStrategyError):
    """One or more preset files that cannot be used; every line names its file.

    An UnknownStrategyError, so whoever reports bad strategy names reports these too."""


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: str
    params: dict[str, Any] = Field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class PresetFactory:
    """A kind's factory with the preset's parameters baked in."""

    preset: Preset
    path: Path
    kind_factory: Any
    # The shipped preset this project preset replaces, if any.
    replaces: Path | None = None

    @property
    def name(self) -> str:
        return self.preset.name

    @property
    def description(self) -> str:
        text = self.preset.description or f"{self.preset.kind} preset"
        return text + (" (replaces the shipped preset)" if self.replaces else "")

    def __call__(self, **overrides: Any) -> ContextStrategy:
        return self.kind_factory(**{**self.preset.params, **overrides})  # type: ignore[no-any-return]


def default_preset_dirs() -> list[Path]:
    """``./strategies`` when it exists: presets are found from where pytest runs."""
    here = Path.cwd() / PRESET_DIR
    return [here] if here.is_dir() else []


def preset_files(dirs: Iterable[Path]) -> list[Path]:
    return [
        f for d in dirs if d.is_dir() for f in sorted(d.iterdir()) if f.suffix in PRESET_SUFFIXES
    ]


def shipped_presets() -> dict[str, PresetFactory]:
    """The presets the package ships, checked against the built-in strategies."""
    return dict(_shipped_presets())


@functools.cache
def _shipped_presets() -> dict[str, PresetFactory]:
    # Read once per process: every cache-hostile instance looks names up.
    from .lookup import builtin_strategies

    return load_presets([SHIPPED_PRESET_DIR], builtin_strategies())


def load_presets(dirs: Iterable[Path], kinds: Mapping[str, Any]) -> dict[str, PresetFactory]:
    """Every preset in ``dirs``, checked against ``kinds`` (name -> factory).

    Presets among ``kinds`` (the shipped ones) are no kinds: a preset in
    ``dirs`` may replace one of them, and records which."""
    strategies = {n: f for n, f in kinds.items() if not isinstance(f, PresetFactory)}
    replaceable = {n: f for n, f in kinds.items() if isinstance(f, PresetFactory)}
    found: dict[str, PresetFactory] = {}
    problems: list[str] = []
    for path in preset_files(dirs):
        try:
            preset = _read(path, strategies)
        except PresetError as exc:
            problems.append(str(exc))
            continue
        if preset.name in strategies:
            problems.append(f"{path}: preset name {preset.name!r} is taken by a built-in strategy")
        elif preset.name in found:
            problems.append(
                f"{path}: preset {preset.name!r} is also defined in {found[preset.name].path}"
            )
        else:
            replaced = replaceable.get(preset.name)
            found[preset.name] = PresetFactory(
                preset, path, strategies[preset.kind], replaced.path if replaced else None
            )
    if problems:
        raise PresetError("\n".join(problems))
    return found


def _read(path: Path, kinds: Mapping[str, Any]) -> Preset:
    # Read as scenario files are, under the same limits (CTXEVAL_MAX_*): a
    # pull request can add a preset, and a 4 KB alias bomb would otherwise
    # take gigabytes.  Its includes stay in its folder.
    from ..scenario.errors import ScenarioError
    from ..scenario.limits import InvalidLimit, Limits
    from ..scenario.textfile import FileProblem, read_text_file
    from ..scenario.yamlsource import parse_yaml

    try:
        limits = Limits.from_env()
        text = read_text_file(path, limits)
        _, data = parse_yaml(
            text,
            str(path),
            base_dir=path.parent,
            root=path.parent,
            limits=limits,
            chain=(path.resolve(),),
        )
    except (FileProblem, InvalidLimit) as exc:
        raise PresetError(f"{path}: cannot read the preset: {exc}") from None
    except ScenarioError as exc:
        raise PresetError(f"{exc} (cannot read the preset)") from None
    if not isinstance(data, dict):
        raise PresetError(f"{path}: expected a mapping with name, kind, params, description")
    try:
        preset = Preset.model_validate(data)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise PresetError(f"{path}: {errors}") from None
    if preset.kind not in kinds:
        raise PresetError(
            f"{path}: unknown kind {preset.kind!r}{did_you_mean(preset.kind, kinds)}; "
            f"known kinds: {', '.join(sorted(kinds))}"
        )
    try:
        params = check_params(f"kind {preset.kind!r}", kinds[preset.kind], preset.params)
    except StrategyParamError as exc:
        raise PresetError(f"{path}: {exc}") from None
    return preset.model_copy(update={"params": params})
