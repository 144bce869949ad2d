"""``ctxeval strategies``: the available strategies and the project's presets."""

from __future__ import annotations

import argparse
import sys

from ..llm.error_text import error_line
from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    command("strategies", "List the available strategies and the presets in ./strategies")


def _strategies(args: argparse.Namespace) -> int:
    from ..strategies.presets import PresetError, default_preset_dirs, load_presets
    from ..strategies.registry import available

    def shown(params: dict[str, object]) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in params.items())

    known = available(preset_dirs=[])
    builtin_rows = []
    for name, factory in sorted(known.items()):
        description = getattr(factory, "description", "") or ""
        try:
            params = factory().params()  # type: ignore[attr-defined]
        except Exception:
            params = {}
        builtin_rows.append([name, description, f"[{shown(params)}]" if params else ""])
    dirs = default_preset_dirs()
    try:
        presets = load_presets(dirs, known)
    except PresetError as exc:
        print(f"ctxeval strategies: {error_line(exc)}", file=sys.stderr)
        return 1
    preset_rows = [
        [
            name,
            f"{preset.preset.kind}({shown(preset.preset.params)})",
            preset.description,
            f"[{preset.path.name}]",
        ]
        for name, preset in sorted(presets.items())
    ]
    # One name column for both tables, so they read as one list.
    width = max(len(row[0]) for row in builtin_rows + preset_rows)
    for line in columns(builtin_rows, first_width=width):
        print(line)
    if preset_rows:
        print(f"\npresets ({', '.join(str(d) for d in dirs)}):")
        for line in columns(preset_rows, first_width=width):
            print(line)
    return 0


def columns(rows: list[list[str]], *, first_width: int = 0) -> list[str]:
    """Rows as lines of left-aligned columns two spaces apart; the last
    column is not padded."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    widths[0] = max(widths[0], first_width)
    return [
        "  ".join([c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)] + [row[-1]]).rstrip()
        for row in rows
    ]


HANDLERS: dict[str, Handler] = {"strategies": _strategies}
