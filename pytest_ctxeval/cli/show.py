"""``ctxeval show``: the exact window a strategy sends to the model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..cli_validate import include_root
from ..llm.error_text import error_line
from .command import AddCommand, Handler

if TYPE_CHECKING:
    from ..scenario.build import Conversation

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


def add(command: AddCommand) -> None:
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


def _show(args: argparse.Namespace) -> int:
    from ..evaluate.inspect import render_window, window_at, window_json
    from ..llm.client import ModelError
    from ..llm.models import describe_unknown_model
    from ..scenario.errors import ScenarioError
    from ..scenario.loader import load_conversations
    from ..strategies.registry import UnknownStrategyError, resolve

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


HANDLERS: dict[str, Handler] = {"show": _show}
