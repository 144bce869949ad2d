"""Where a scenario's file references may point: inside its root, never into
a hidden file or folder, never through a link that leads out.

A pull request can add a scenario file, and a CI checkout keeps credentials
in ``.git/config``; a file collected from the repository root (``pytest .``)
has the whole checkout as its root, so staying under the root is not enough:
hidden files and folders (``.git``, ``.env``, ``.ssh``) are refused too."""

from __future__ import annotations

import os
from pathlib import Path


def confinement_problem(written: Path, resolved: Path, root: Path) -> str | None:
    """Why the reference ``written`` (base folder joined with what the file
    says), which resolves to ``resolved``, may not be read from a scenario
    whose root is ``root``; None when it may.  The reason names the root."""
    root = root.resolve()
    lexical = Path(os.path.normpath(written))
    if not resolved.is_relative_to(root):
        if lexical.is_relative_to(root):
            return (
                f"is a symbolic link to {resolved}, outside the scenario root {root}; "
                "expected a file inside the root"
            )
        return f"leaves the scenario root {root}; expected a file inside the root"
    for shown, inside in (("", resolved), ("through a link, ", lexical)):
        if not inside.is_relative_to(root):
            continue
        hidden = next((p for p in inside.relative_to(root).parts if p.startswith(".")), None)
        if hidden is not None:
            return (
                f"reaches {shown}into {hidden!r}, a hidden file or folder under the scenario "
                f"root {root}; hidden files and folders (.git, .env, ...) are never included"
            )
    return None
