"""``ctxeval merge`` and ``ctxeval gate``: joining shards, gating a run."""

from __future__ import annotations

from ..gate import cli as gate_cli
from .command import Handler

add = gate_cli.add_commands
HANDLERS: dict[str, Handler] = {"merge": gate_cli.merge, "gate": gate_cli.gate}
