"""The ``ctxeval`` console script."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..cli_parser import CliParser, HelpFormatter, subparsers, unrecognized_arguments
from ..llm.error_text import error_line
from . import (
    conform,
    gate,
    history,
    importing,
    init,
    report,
    schema,
    show,
    strategies,
    validate,
)
from .command import Handler

# The commands in the order `ctxeval --help` lists them; a new command is a
# module with ``add`` and ``HANDLERS`` (see command.py) and one line here.
COMMANDS = (validate, schema, strategies, show, report, history, gate, conform, importing, init)

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
  ctxeval runs                        # the runs kept under reports/runs/
  ctxeval compare previous latest     # two runs side by side: worse, better
  ctxeval view                        # open the latest report
  pytest --ctx-strategy=headtail      # run the scenarios under one strategy
  ctxeval merge -o all.jsonl shard-*.jsonl   # join the results of CI shards
  ctxeval gate all.jsonl --baseline ctxeval-baseline.json
  ctxeval conform "langchain-trim(max_tokens=2000)"   # window rules + the suite
  ctxeval init my-project             # scenarios, a strategy, pytest.ini, CI: pytest runs it

`ctxeval COMMAND --help` describes one command."""


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: every command's output may go to a reader that
    stops early (``ctxeval schema | head``); that ends the command quietly."""
    try:
        code = _run(argv)
        # Flushed here, not at exit, so a closed pipe is caught below.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null: the interpreter's last flush at exit would
    otherwise hit the closed pipe again and print a warning."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (captured in tests)
        pass


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = subparsers(parser).get(args.command, parser)
        sub.error(unrecognized_arguments(sub, extras))
    if args.command is None:
        parser.error(f"no command given; commands: {', '.join(parser.choices())}")
    handlers: dict[str, Handler] = {
        name: run for module in COMMANDS for name, run in module.HANDLERS.items()
    }
    handler = handlers[args.command]
    try:
        return handler(args)
    except BrokenPipeError:
        raise  # the reader left: not an error (see main)
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

    for module in COMMANDS:
        module.add(command)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-ctxeval")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
