"""``ctxeval import``: real transcripts turned into scenario files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    importer = command("import", "Turn real transcripts into scenario files")
    # No argparse choices: an unknown format gets our own message and exit code 1.
    importer.add_argument(
        "format", metavar="FORMAT", help="One of locomo, multichallenge, openai-jsonl, tau-bench"
    )
    importer.add_argument("file", metavar="FILE", type=Path, help="The transcript file")
    importer.add_argument(
        "-o", "--output", metavar="DIR", type=Path, required=True, help="Directory to write to"
    )
    importer.add_argument(
        "--sessions",
        choices=("split", "join"),
        default=None,
        help="locomo: each session a chat of its own (split, the default) or all one chat (join)",
    )


def _import(args: argparse.Namespace) -> int:
    from ..scenario.importers import IMPORTERS, TranscriptError, import_file, write_scenarios
    from ..scenario.importers._common import candidate_summary

    if args.format not in IMPORTERS:
        known = ", ".join(sorted(IMPORTERS))
        print(
            f"ctxeval import: unknown format {args.format!r}; known formats: {known}",
            file=sys.stderr,
        )
        return 1
    source = str(args.file)
    try:
        drafts = import_file(args.format, args.file, sessions=args.sessions)
        written = write_scenarios(drafts, args.output, source)
    except TranscriptError as exc:
        print(f"ctxeval import: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ctxeval import: cannot write to {args.output}: {exc}", file=sys.stderr)
        return 1
    plural = "s" if len(written) != 1 else ""
    print(f"{source}: {len(written)} scenario{plural} written to {args.output}")
    summary = candidate_summary(drafts)
    if summary is not None:
        print(f"{source}: {summary}")
    return 0


HANDLERS: dict[str, Handler] = {"import": _import}
