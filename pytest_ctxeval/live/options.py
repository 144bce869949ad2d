"""The options of a run's live feedback: --ctx-progress, --ctx-progress-every,
--ctx-max-failures and --ctx-verbose (each with its ini twin; the option wins)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

PROGRESS_MODES = ("auto", "on", "off")
PROGRESS_HELP = (
    "The live progress line (items, model calls, tokens, cost, elapsed, ETA): auto "
    "(refreshed in place on a terminal, a plain line every --ctx-progress-every seconds "
    "otherwise), on (also when pytest's output is captured) or off"
)
EVERY_HELP = (
    "Seconds between two plain progress lines when the output is not a terminal (CI logs); "
    "0 = after every item"
)
MAX_FAILURES_HELP = (
    "Stop the run once this many context losses have been found (0 = never); the results "
    "and the report are still written for what ran, and the run fails"
)
VERBOSE_HELP = (
    "Print each failed ctxeval item's full block (answers, expectation, fact survival, "
    "tokens) instead of one line; -v does the same"
)


@dataclass(frozen=True)
class LiveOptions:
    progress: str = "auto"
    progress_every: float = 30.0
    max_failures: int = 0


LIVE_KEY = pytest.StashKey[LiveOptions]()


def add_live_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxeval", "context-strategy evaluation (pytest-ctxeval)")
    group.addoption(
        "--ctx-progress",
        dest="ctx_progress",
        default=None,
        metavar="auto|on|off",
        help=PROGRESS_HELP + " (default: auto)",
    )
    parser.addini("ctx_progress", PROGRESS_HELP + " (default: auto)", default="auto")
    group.addoption(
        "--ctx-progress-every",
        dest="ctx_progress_every",
        default=None,
        metavar="SECONDS",
        help=EVERY_HELP + " (default: 30)",
    )
    parser.addini("ctx_progress_every", EVERY_HELP + " (default: 30)", default="30")
    group.addoption(
        "--ctx-max-failures",
        dest="ctx_max_failures",
        default=None,
        metavar="N",
        help=MAX_FAILURES_HELP + " (default: 0)",
    )
    parser.addini("ctx_max_failures", MAX_FAILURES_HELP + " (default: 0)", default="0")
    group.addoption(
        "--ctx-verbose",
        dest="ctx_verbose",
        action="store_true",
        default=False,
        help=VERBOSE_HELP + " (default: off)",
    )
    parser.addini("ctx_verbose", VERBOSE_HELP, type="bool", default=False)


def live_options(config: pytest.Config) -> LiveOptions:
    """The run's live options, read and checked once (a bad value is a usage error)."""
    if LIVE_KEY not in config.stash:
        config.stash[LIVE_KEY] = _read(config)
    return config.stash[LIVE_KEY]


def wants_blocks(config: pytest.Config) -> bool:
    """Whether a failed item prints its full block rather than one line."""
    return config.get_verbosity() > 0 or bool(
        config.getoption("ctx_verbose", False) or config.getini("ctx_verbose")
    )


def _get(config: pytest.Config, dest: str) -> str:
    value = config.getoption(dest)
    return str(config.getini(dest) if value is None else value).strip()


def _read(config: pytest.Config) -> LiveOptions:
    progress = _get(config, "ctx_progress").lower()
    if progress not in PROGRESS_MODES:
        raise pytest.UsageError(
            f"--ctx-progress: invalid value {progress!r}; expected one of: "
            + ", ".join(PROGRESS_MODES)
        )
    every_text = _get(config, "ctx_progress_every")
    try:
        every = float(every_text)
    except ValueError:
        every = -1.0
    if not every >= 0:  # NaN fails this too
        raise pytest.UsageError(
            f"--ctx-progress-every: invalid value {every_text!r}; expected a number of "
            "seconds >= 0 (0 = a line after every item)"
        )
    failures_text = _get(config, "ctx_max_failures")
    if not failures_text.isdigit():
        raise pytest.UsageError(
            f"--ctx-max-failures: invalid value {failures_text!r}; expected a whole number "
            ">= 0 (0 = never stop)"
        )
    return LiveOptions(progress=progress, progress_every=every, max_failures=int(failures_text))
