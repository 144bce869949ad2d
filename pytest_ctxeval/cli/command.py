"""What each command module of the ``ctxeval`` CLI provides: ``add``, which
declares its subcommand(s) through ``command(name, summary)``, and
``HANDLERS``, each subcommand's function by name."""

from __future__ import annotations

import argparse
from collections.abc import Callable

AddCommand = Callable[[str, str], argparse.ArgumentParser]
Handler = Callable[[argparse.Namespace], int]
