"""The exit codes of a gated run, so CI can tell a regression from a broken run."""

from __future__ import annotations

from enum import IntEnum


class GateExit(IntEnum):
    OK = 0
    # pytest's own "tests failed": the items of the regressed probes failed.
    REGRESSION = 1
    # No probe regressed, but a --ctx-fail-if budget rule broke.
    BUDGET = 6
    # Nothing regressed and no rule broke, but some items could not be
    # evaluated (model errors): the gate cannot vouch for them.
    ERRORS = 7
    # pytest's own usage error: a bad option, an unreadable baseline.
    USAGE = 4


def gate_exit(*, regressions: int, breaches: int, errors: int) -> GateExit:
    if regressions:
        return GateExit.REGRESSION
    if breaches:
        return GateExit.BUDGET
    if errors:
        return GateExit.ERRORS
    return GateExit.OK
