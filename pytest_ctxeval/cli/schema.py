"""``ctxeval schema``: the JSON Schema of the scenario format."""

from __future__ import annotations

from ..scenario.schema_command import schema_command
from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    schema = command("schema", "Print the JSON Schema of the scenario format")
    schema.add_argument(
        "--markdown", action="store_true", help="Print a field reference in Markdown instead"
    )


HANDLERS: dict[str, Handler] = {"schema": schema_command}
