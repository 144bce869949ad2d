"""The ``ctxeval show`` command that prints the window an item's strategy sent."""

from __future__ import annotations

import shlex

from .results.record import ResultRecord


def show_command(record: ResultRecord) -> str | None:
    """The command for ``record``'s item, or None when the record does not say
    which file it came from.  The strategy is named as ``--ctx-strategy``
    accepts it: a ``module:Class`` that names itself is given by its import path."""
    if not record.scenario_file:
        return None
    return shlex.join(
        [
            "ctxeval",
            "show",
            record.scenario_file,
            "--id",
            record.scenario,
            "--strategy",
            record.strategy_ref or record.strategy,
            "--probe",
            record.probe,
        ]
    )
