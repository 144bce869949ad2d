"""``ctxeval validate``: check scenario files without running them."""

from __future__ import annotations

from pathlib import Path

from ..cli_validate import validate
from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    validate = command("validate", "Check scenario files without running them")
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="Files or folders")
    validate.add_argument(
        "--root",
        type=Path,
        default=None,
        help="Directory that !include may not leave (default: a directory given, "
        "else the current directory for files inside it)",
    )


HANDLERS: dict[str, Handler] = {"validate": validate}
