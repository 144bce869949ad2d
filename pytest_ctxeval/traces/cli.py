"""``ctxeval import otel|openinference SOURCE -o DIR``: the trace formats'
options and what the command prints for them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..scenario.importers._common import TranscriptError
from . import TRACE_FORMATS, TraceOptions, import_traces, write_files
from .redaction import BadPattern, Redactor, compile_patterns


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(f"traces ({', '.join(TRACE_FORMATS)})")
    group.add_argument(
        "--logs",
        type=Path,
        metavar="FILE",
        help="otel: an OTLP JSON logs file holding the message events of older GenAI "
        "instrumentations, joined to their spans",
    )
    group.add_argument(
        "--endpoint", metavar="URL", help="phoenix: the server, e.g. http://localhost:6006"
    )
    group.add_argument("--project", metavar="NAME", help="phoenix: the project to read")
    group.add_argument("--session", metavar="ID", help="phoenix: only this session's traces")
    group.add_argument("--since", metavar="TIME", help="phoenix: only spans from this ISO time on")
    group.add_argument(
        "--session-key",
        metavar="ATTRIBUTE",
        help="The span attribute that names a conversation, where no convention applies "
        "(default: gen_ai.conversation.id or session.id, on the span or an ancestor; "
        "else the trace)",
    )
    group.add_argument(
        "--longer-than",
        type=int,
        default=0,
        metavar="N",
        help="Keep only sessions of more than N user turns",
    )
    group.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="Also replace what this regular expression matches by [redacted] (repeatable); "
        "key-shaped text and key-like environment values always are",
    )


def run(args: argparse.Namespace) -> int:
    if args.sessions is not None:
        print(
            f"ctxeval import: --sessions applies to locomo only, not to {args.format}",
            file=sys.stderr,
        )
        return 1
    if args.longer_than < 0:
        print(
            f"ctxeval import: --longer-than {args.longer_than}: expected 0 or more", file=sys.stderr
        )
        return 1
    try:
        redactor = Redactor(compile_patterns(args.redact_pattern))
    except BadPattern as exc:
        print(f"ctxeval import: {exc}", file=sys.stderr)
        return 1
    problem = _misplaced(args)
    if problem:
        print(f"ctxeval import: {problem}", file=sys.stderr)
        return 2
    options = TraceOptions(
        logs=args.logs,
        endpoint=args.endpoint,
        project=args.project,
        since=args.since,
        session=args.session,
        session_key=args.session_key,
        longer_than=args.longer_than,
        redactor=redactor,
    )
    source = str(args.project) if args.format == "phoenix" else str(args.file)
    try:
        result = import_traces(args.format, args.file, options, source)
        written = write_files(result.files, args.output)
    except TranscriptError as exc:
        print(f"ctxeval import: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ctxeval import: cannot write to {args.output}: {exc}", file=sys.stderr)
        return 1
    scenarios = sum(1 for p in written if p.suffix == ".yaml")
    for line in result.summary():
        print(line)
    print(
        f"{source}: {scenarios} scenario{'s' if scenarios != 1 else ''} and their recorded "
        f"windows written to {args.output}"
    )
    if redactor.count:
        print(f"{source}: redacted {redactor.count} text(s)")
    return 0


def _misplaced(args: argparse.Namespace) -> str | None:
    """An option or FILE given where it does not apply, or missing where it must be."""
    remote = (args.endpoint, args.project, args.since, args.session)
    if args.format == "phoenix":
        if args.file is not None:
            return "phoenix reads a server (--endpoint URL --project NAME), not a FILE"
        if not args.endpoint or not args.project:
            return "phoenix needs --endpoint URL and --project NAME"
        return None
    if args.file is None:
        return f"{args.format} needs FILE, the traces file"
    if any(v is not None for v in remote):
        return "--endpoint, --project, --session and --since apply to phoenix only"
    return None
