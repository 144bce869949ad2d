"""pytest-ctxeval: test how an agent's context strategy holds up over long sessions.

The public API is imported lazily: this package loads in every pytest run
once installed, and must cost nothing there.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "BaseStrategy": "pytest_ctxeval.strategies.base",
    "ContextStrategy": "pytest_ctxeval.strategies.base",
    "StrategyContext": "pytest_ctxeval.strategies.base",
    "Window": "pytest_ctxeval.strategies.base",
    "register_strategy": "pytest_ctxeval.strategies.registry",
    "check_invariants": "pytest_ctxeval.strategies.invariants",
    "assert_invariants": "pytest_ctxeval.strategies.invariants",
    "Scenario": "pytest_ctxeval.scenario.schema",
    "ScenarioError": "pytest_ctxeval.scenario.errors",
    "ScenarioWarning": "pytest_ctxeval.scenario.errors",
    "window_violations": "pytest_ctxeval.strategies.window_rules",
    "load_scenarios": "pytest_ctxeval.scenario.loader",
    "ResultRecord": "pytest_ctxeval.results.record",
    "load_results": "pytest_ctxeval.results.store",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ctxeval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
