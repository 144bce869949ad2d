"""``ctxeval init [DIR]``: scaffold a project (see pytest_ctxeval.scaffold)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    init = command(
        "init",
        "Scaffold a project: scenarios of each kind, a strategy of your own, pytest.ini, "
        "a CI workflow",
    )
    init.add_argument("dir", nargs="?", default=".", help="Where (default: the current folder)")
    init.add_argument(
        "--force", action="store_true", help="Overwrite files that exist (default: skip them)"
    )


def init_command(args: argparse.Namespace) -> int:
    from ..scaffold import report_lines, scaffold

    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        print(f"ctxeval init: {args.dir!r} is not a directory; expected a folder", file=sys.stderr)
        return 2
    try:
        done = scaffold(target, force=args.force)
    except OSError as exc:
        print(f"ctxeval init: cannot write in {args.dir!r}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for line in report_lines(done, target):
        print(line)
    return 0


HANDLERS: dict[str, Handler] = {"init": init_command}
