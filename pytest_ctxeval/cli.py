"""The ``ctxeval`` console script."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .cli_parser import CliParser, HelpFormatter, subparsers, unrecognized_arguments
from .cli_validate import include_root, validate
from .gate import cli as gate_cli
from .gate.baseline import BaselineError
from .llm.error_text import error_line
from .scenario.schema_command import schema_command
from .traces import TRACE_FORMATS
from .traces import cli as traces_cli

if TYPE_CHECKING:
    from .scenario.build import Conversation

DESCRIPTION = """\
ctxeval: the command line of pytest-ctxeval, the pytest plugin that tests how
an LLM agent's context strategy (truncation, sliding window, summaries, memory,
retrieval, tool-output pruning, sub-agents) holds up over long sessions.

Scenarios are YAML files: a session, facts planted in it, and probes asked
after it. `pytest` runs them; these commands check, inspect and report."""

EXAMPLES = """\
examples:
  ctxeval validate scenarios/
  ctxeval show scenarios/needle-middle-30.yaml --strategy sliding
  ctxeval show scenarios/needle-middle-30.yaml --strategy sliding --turn 3
  ctxeval report reports/results.jsonl -o reports/ctxeval.html
  pytest --ctx-strategy=headtail      # run the scenarios under one strategy
  ctxeval merge -o all.jsonl shard-*.jsonl   # join the results of CI shards
  ctxeval gate all.jsonl --baseline ctxeval-baseline.json

`ctxeval COMMAND --help` describes one command."""

# A turn is a user message and everything after it up to the next user
# message; a message is one entry of the session. The CLI counts both so.
SHOW_TURN_HELP = (
    "Show the model call that answers the N-th user message (1-based; a turn is a user "
    "message and what follows it up to the next one); default: the probe"
)
SHOW_MESSAGE_HELP = (
    "Show the model call that writes the N-th message of the session (1-based, "
    "the system prompt not counted), e.g. an answer after tool results"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = subparsers(parser).get(args.command, parser)
        sub.error(unrecognized_arguments(sub, extras))
    if args.command is None:
        parser.error(f"no command given; commands: {', '.join(parser.choices())}")
    handler = {
        "validate": validate,
        "schema": schema_command,
        "strategies": _strategies,
        "show": _show,
        "report": _report,
        "import": _import,
        "merge": gate_cli.merge,
        "gate": gate_cli.gate,
    }[args.command]
    try:
        return handler(args)
    except Exception as exc:  # an error we did not foresee is still one line
        print(f"ctxeval {args.command}: {type(exc).__name__}: {error_line(exc)}", file=sys.stderr)
        return 1


def build_parser() -> CliParser:
    parser = CliParser(
        prog="ctxeval",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {_version()}",
        help="show the version and exit",
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", title="commands", parser_class=CliParser
    )

    # Each subparser also gets a description, so `ctxeval X --help` says what X does.
    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary)

    validate = command("validate", "Check scenario files without running them")
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="Files or folders")
    validate.add_argument(
        "--root",
        type=Path,
        default=None,
        help="Directory that !include may not leave (default: a directory given, "
        "else the current directory for files inside it)",
    )
    schema = command("schema", "Print the JSON Schema of the scenario format")
    schema.add_argument(
        "--markdown", action="store_true", help="Print a field reference in Markdown instead"
    )
    command("strategies", "List the available strategies and the presets in ./strategies")
    show = command("show", "Print the exact window a strategy sends to the model")
    show.add_argument("scenario", type=Path, help="A scenario file")
    show.add_argument("--id", help="Which scenario of the file (default: the first)")
    show.add_argument("--strategy", default="full", help="A strategy or preset name")
    when = show.add_mutually_exclusive_group()
    when.add_argument("--turn", type=int, metavar="N", help=SHOW_TURN_HELP)
    when.add_argument("--message", type=int, metavar="N", help=SHOW_MESSAGE_HELP)
    show.add_argument("--probe", help="Which probe (default: the first)")
    show.add_argument("--model", default="ctxeval/oracle", help="For strategies that call one")
    show.add_argument("--json", action="store_true", help="Print messages and tools as JSON")
    report = command("report", "Render the HTML report from a results file")
    report.add_argument("results", type=Path, help="A results file (JSON lines)")
    report.add_argument("-o", "--output", type=Path, default=Path("reports/ctxeval.html"))
    report.add_argument(
        "--baseline",
        type=Path,
        help="Gate the results against this baseline, as `ctxeval gate` does: the header "
        "says what it decided, and regressed items are marked apart from known losses",
    )
    report.add_argument("--fail-if", default="", metavar="RULES", help="Budget rules, as gate's")
    report.add_argument("--allow-removed", action="store_true", help="As gate's --allow-removed")
    report.add_argument(
        "--root", type=Path, default=Path("."), help="As gate's --root (default: .)"
    )
    gate_cli.add_commands(command)
    importer = command("import", "Turn real transcripts into scenario files")
    # No argparse choices: an unknown format gets our own message and exit code 1.
    importer.add_argument(
        "format",
        metavar="FORMAT",
        help="Transcripts: locomo, multichallenge, openai-jsonl, tau-bench. "
        "Traces: langfuse, langsmith, openinference, otel, phoenix (a running server)",
    )
    importer.add_argument(
        "file", metavar="FILE", type=Path, nargs="?", help="The transcript file (not for phoenix)"
    )
    importer.add_argument(
        "-o", "--output", metavar="DIR", type=Path, required=True, help="Directory to write to"
    )
    importer.add_argument(
        "--sessions",
        choices=("split", "join"),
        default=None,
        help="locomo: each session a chat of its own (split, the default) or all one chat (join)",
    )
    traces_cli.add_arguments(importer)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-ctxeval")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _strategies(args: argparse.Namespace) -> int:
    from .strategies.presets import PresetError, default_preset_dirs, load_presets
    from .strategies.registry import available

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


def _show(args: argparse.Namespace) -> int:
    from .evaluate.inspect import render_window, window_at, window_json
    from .llm.client import ModelError
    from .llm.models import describe_unknown_model
    from .scenario.errors import ScenarioError
    from .scenario.loader import load_conversations
    from .strategies.registry import UnknownStrategyError, resolve

    try:
        # Only strategies that call a model send anything: no key is checked here.
        problem = describe_unknown_model(args.model, calls_model=False)
        if problem:
            raise ValueError(f"--model: {problem}")
        conversations = load_conversations(args.scenario, root=include_root(args.scenario, None))
        (spec,) = resolve(args.strategy, preset_dirs=[Path.cwd() / "strategies"])
        conversation = next((c for c in conversations if args.id in (None, c.id)), None)
        if conversation is None:
            ids = ", ".join(c.id for c in conversations)
            raise ValueError(f"no scenario {args.id!r} in {args.scenario}; ids: {ids}")
        message = show_message_number(conversation, turn=args.turn, message=args.message)
        window = window_at(conversation, spec, turn=message, probe=args.probe, model=args.model)
    except ModelError as exc:
        print(
            f"ctxeval show: {args.strategy} called {args.model}: {error_line(exc)}", file=sys.stderr
        )
        return 1
    except ScenarioError as exc:
        print(exc, file=sys.stderr)  # one "file:line:column: message" line per problem
        return 1
    except (UnknownStrategyError, ValueError) as exc:
        print(f"ctxeval show: {error_line(exc)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(window_json(window), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(render_window(window, args.model))
    return 0


def show_message_number(
    conversation: Conversation, *, turn: int | None, message: int | None
) -> int | None:
    """The message (1-based, after the system prompt) whose model call to
    show, from ``--turn`` or ``--message``; None for the probe. A number out
    of range is a ValueError naming the valid range."""
    session = [m for m in conversation.messages if m["role"] != "system"]
    if message is not None:
        if not 1 <= message <= len(session):
            raise ValueError(
                f"--message {message}: scenario {conversation.id!r} has "
                + _counted(len(session), "message", "messages after the system prompt")
            )
        return message
    if turn is None:
        return None
    users = [i for i, m in enumerate(session) if m["role"] == "user"]
    if not 1 <= turn <= len(users):
        raise ValueError(
            f"--turn {turn}: scenario {conversation.id!r} has "
            + _counted(len(users), "turn", "turns (user messages)")
        )
    # The call that answers the user message sees it: show the message after it.
    return users[turn - 1] + 2


def _counted(count: int, one: str, many: str) -> str:
    if count == 0:
        return f"no {many}"
    return f"{count} {one if count == 1 else many}; valid: 1 to {count}"


def _report(args: argparse.Namespace) -> int:
    from .report.html import write_report
    from .results.store import load_results

    gated = None
    try:
        records = load_results(args.results)
        if args.baseline is not None:
            from .gate.baseline import read_baseline
            from .gate.cli import gate_result
            from .gate.rules import parse_rules

            baseline = read_baseline(args.baseline)
            rules = parse_rules(args.fail_if)
            gated = gate_result(
                records, baseline, rules, args.root, allow_removed=args.allow_removed
            )
    except (OSError, ValueError, BaselineError) as exc:  # RuleError is a ValueError
        print(f"ctxeval report: {exc}", file=sys.stderr)
        return 1
    write_report(args.output, records, gate=gated)
    print(f"report: {args.output} ({len(records)} records)")
    if gated is not None:
        print(gated.headline)
    return 0


def _import(args: argparse.Namespace) -> int:
    from .scenario.importers import IMPORTERS, TranscriptError, import_file, write_scenarios
    from .scenario.importers._common import candidate_summary

    if args.format in TRACE_FORMATS:
        return traces_cli.run(args)
    if args.format not in IMPORTERS:
        known = ", ".join(sorted([*IMPORTERS, *TRACE_FORMATS]))
        print(
            f"ctxeval import: unknown format {args.format!r}; known formats: {known}",
            file=sys.stderr,
        )
        return 1
    if args.file is None:
        print(f"ctxeval import: {args.format} needs FILE, the transcript file", file=sys.stderr)
        return 2
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
