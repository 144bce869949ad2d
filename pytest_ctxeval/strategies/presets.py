"""Strategy presets: ``strategies/*.yaml`` gives a name to a kind plus parameters.

```yaml
name: sliding-8
kind: sliding
params: {turns: 8}
description: The last 8 turns.
```

A preset is checked when it is loaded: unknown keys, an unknown kind or
parameters the kind rejects are errors that name the file.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .base import ContextStrategy
from .registry import UnknownStrategyError

PRESET_DIR = "strategies"
PRESET_SUFFIXES = (".yaml", ".yml")


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

    @property
    def name(self) -> str:
        return self.preset.name

    @property
    def description(self) -> str:
        return self.preset.description or f"{self.preset.kind} preset"

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


def load_presets(dirs: Iterable[Path], kinds: dict[str, Any]) -> dict[str, PresetFactory]:
    """Every preset in ``dirs``, checked against ``kinds`` (name -> factory)."""
    found: dict[str, PresetFactory] = {}
    problems: list[str] = []
    for path in preset_files(dirs):
        try:
            preset = _read(path, kinds)
        except PresetError as exc:
            problems.append(str(exc))
            continue
        if preset.name in kinds:
            problems.append(f"{path}: preset name {preset.name!r} is taken by a built-in strategy")
        elif preset.name in found:
            problems.append(
                f"{path}: preset {preset.name!r} is also defined in {found[preset.name].path}"
            )
        else:
            found[preset.name] = PresetFactory(preset, path, kinds[preset.kind])
    if problems:
        raise PresetError("\n".join(problems))
    return found


def _read(path: Path, kinds: dict[str, Any]) -> Preset:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PresetError(f"{path}: cannot read the preset: {exc}") from None
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
            f"{path}: unknown kind {preset.kind!r}; known kinds: {', '.join(sorted(kinds))}"
        )
    _check_params(path, preset, kinds[preset.kind])
    return preset


def _check_params(path: Path, preset: Preset, factory: Any) -> None:
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # no signature to read: let the call decide
        parameters = []
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = [p.name for p in parameters if p.kind in named]
    if not parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        accepted += list(preset.params)
    unknown = sorted(set(preset.params) - set(accepted))
    if unknown:
        raise PresetError(
            f"{path}: kind {preset.kind!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"it accepts: {', '.join(accepted) or 'none'}"
        )
    try:
        factory(**preset.params)
    except Exception as exc:  # the kind's own validation: say which file fed it
        raise PresetError(f"{path}: bad params for kind {preset.kind!r}: {exc}") from None
