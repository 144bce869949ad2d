"""The run-history options: ``--ctx-keep-runs`` and ``--ctx-fresh``."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

KEEP_RUNS_DEFAULT = 20
KEEP_RUNS_HELP = (
    "How many runs reports/runs/ keeps (each run's results and report, next to "
    "--ctx-results); the oldest go first, 0 keeps none"
)
FRESH_HELP = (
    "Replace the results with this run's items even when it selects only some of "
    "them (-k, -m, --lf, node ids, -x); without it such a run updates its items in "
    "the latest results and the report says which run each item came from"
)


def add_history_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxeval")
    group.addoption(
        "--ctx-keep-runs",
        dest="ctx_keep_runs",
        default=None,
        metavar="N",
        help=f"{KEEP_RUNS_HELP} (default: {KEEP_RUNS_DEFAULT})",
    )
    parser.addini("ctx_keep_runs", KEEP_RUNS_HELP, default=str(KEEP_RUNS_DEFAULT))
    group.addoption(
        "--ctx-fresh",
        dest="ctx_fresh",
        action="store_true",
        default=False,
        help=FRESH_HELP + " (default: off)",
    )
    parser.addini("ctx_fresh", FRESH_HELP, type="bool", default=False)


@dataclass(frozen=True)
class HistoryOptions:
    keep_runs: int = KEEP_RUNS_DEFAULT
    fresh: bool = False

    @classmethod
    def from_config(cls, config: pytest.Config) -> HistoryOptions:
        given = config.getoption("ctx_keep_runs")
        where = "--ctx-keep-runs" if given is not None else "ctx_keep_runs (ini)"
        text = str(given if given is not None else config.getini("ctx_keep_runs")).strip()
        if not text.isdigit():
            raise pytest.UsageError(
                f"{where}: {text!r} is not a whole number of runs; "
                f"expected e.g. {KEEP_RUNS_DEFAULT} (0 keeps none)"
            )
        fresh = bool(config.getoption("ctx_fresh") or config.getini("ctx_fresh"))
        return cls(keep_runs=int(text), fresh=fresh)
