"""Command-line options and their ini twins (the option wins over the ini).

``table`` declares them to pytest, ``values`` reads each value,
``gate_options`` the regression gate's together, and ``ctx_options`` holds
the run's settings built from them all.
"""

from __future__ import annotations

from .ctx_options import CtxOptions
from .table import (
    ALLOW_REMOVED_HELP,
    BUDGET_HELP,
    DEFAULT_BASELINE,
    DEFAULT_SCENARIO_DIR,
    FAIL_ON,
    MOCK_MODEL_PREFIX,
    RECORD_MODES,
    SWEEP_HELP,
    add_options,
)

__all__ = [
    "ALLOW_REMOVED_HELP",
    "BUDGET_HELP",
    "DEFAULT_BASELINE",
    "DEFAULT_SCENARIO_DIR",
    "FAIL_ON",
    "MOCK_MODEL_PREFIX",
    "RECORD_MODES",
    "SWEEP_HELP",
    "CtxOptions",
    "add_options",
]
