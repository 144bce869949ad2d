"""argparse for the ``ctxeval`` command: every usage error is one line, and a
misspelt command or option gets a "did you mean"."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import NoReturn

# How argparse words a value outside an argument's choices (here: an unknown command).
_INVALID_CHOICE = re.compile(r"invalid choice: '?(?P<value>[^'(]*?)'? \(choose from")


class CliParser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        # No abbreviated options: "--tun" is a typo to point out, not "--turn"
        # (and Python versions disagree on abbreviations in subcommands).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice:
            value = choice.group("value")
            known = self.choices()
            hint = did_you_mean(value, known) or f"; commands: {', '.join(known)}"
            message = f"unknown command {value!r}{hint}"
        self.exit(2, f"{self.prog}: {message} (see: {self.prog} --help)\n")

    def choices(self) -> list[str]:
        """The names an argument with choices accepts (here: the commands)."""
        return [str(c) for action in self._actions if action.choices for c in action.choices]

    def option_strings(self) -> list[str]:
        return [o for action in self._actions for o in action.option_strings]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written, and the commands as a plain two-column list
    (argparse would add a "COMMAND" heading line and wrap long names)."""

    def _format_action(self, action: argparse.Action) -> str:
        if not isinstance(action, argparse._SubParsersAction):
            return super()._format_action(action)
        rows = [(str(a.metavar or a.dest), a.help or "") for a in action._get_subactions()]
        width = max(len(name) for name, _ in rows)
        return "".join(f"  {name.ljust(width)}  {summary}\n" for name, summary in rows)


def did_you_mean(value: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unrecognized_arguments(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """What argparse could not place, as one sentence. Unknown options come
    first and alone: the words after one are usually its value."""
    known = parser.option_strings() if isinstance(parser, CliParser) else []
    options = [e for e in extras if e.startswith("-") and not _is_number(e)]
    if not options:
        return "unexpected argument" + ("s " if len(extras) > 1 else " ") + " ".join(extras)
    return "; ".join(
        f"unknown option {option}{did_you_mean(option.split('=')[0], known)}" for option in options
    )


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Command name -> its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
