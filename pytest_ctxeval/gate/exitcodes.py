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
    # The results lack probes the baseline has and the scenarios still have
    # (a crashed or skipped shard): the gate refuses to pass them.
    INCOMPLETE = 8
    # Baseline probes gone from the scenarios that no probe of the run
    # matches (ids and content changed), without --ctx-allow-removed.
    UNMATCHED = 9
    # pytest's own usage error: a bad option, an unreadable baseline.
    USAGE = 4


MEANING = {
    GateExit.REGRESSION: "a probe regressed",
    GateExit.BUDGET: "a --ctx-fail-if budget rule broke",
    GateExit.ERRORS: "some items could not be evaluated (errors); nothing regressed",
    GateExit.INCOMPLETE: "results incomplete: probes the scenarios still have are missing",
    GateExit.UNMATCHED: "baseline probes match nothing in the run (--ctx-allow-removed allows it)",
}


def gate_exit(
    *, regressions: int, breaches: int, errors: int, missing: int = 0, unmatched: int = 0
) -> GateExit:
    """The first that applies: a regression, incomplete results, unmatched
    baseline probes, a broken budget rule, errors."""
    if regressions:
        return GateExit.REGRESSION
    if missing:
        return GateExit.INCOMPLETE
    if unmatched:
        return GateExit.UNMATCHED
    if breaches:
        return GateExit.BUDGET
    if errors:
        return GateExit.ERRORS
    return GateExit.OK
