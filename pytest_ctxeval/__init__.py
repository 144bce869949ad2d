"""pytest-ctxeval: test how an agent's context strategy holds up over long sessions.

The public API is imported lazily: this package loads in every pytest run
once installed, and must cost nothing there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # What type checkers see: the real names and types behind the lazy exports.
    from .messages import Message, content_text
    from .results.analysis import (
        pareto_front,
        pass_rate_matrix,
        results_frame,
        strategy_table,
        task_costs,
    )
    from .results.record import ResultRecord
    from .results.store import load_results
    from .scenario.errors import ScenarioError, ScenarioWarning
    from .scenario.loader import load_scenarios
    from .scenario.schema import Scenario
    from .strategies.base import BaseStrategy, ContextStrategy, StrategyContext, Window
    from .strategies.invariants import assert_invariants, check_invariants
    from .strategies.loading import load_strategy
    from .strategies.registry import register_strategy
    from .strategies.window_rules import window_violations

__version__ = "0.1.0"

_EXPORTS = {
    "BaseStrategy": "pytest_ctxeval.strategies.base",
    "ContextStrategy": "pytest_ctxeval.strategies.base",
    "StrategyContext": "pytest_ctxeval.strategies.base",
    "Window": "pytest_ctxeval.strategies.base",
    "Message": "pytest_ctxeval.messages",
    "content_text": "pytest_ctxeval.messages",
    "register_strategy": "pytest_ctxeval.strategies.registry",
    "load_strategy": "pytest_ctxeval.strategies.loading",
    "check_invariants": "pytest_ctxeval.strategies.invariants",
    "assert_invariants": "pytest_ctxeval.strategies.invariants",
    "Scenario": "pytest_ctxeval.scenario.schema",
    "ScenarioError": "pytest_ctxeval.scenario.errors",
    "ScenarioWarning": "pytest_ctxeval.scenario.errors",
    "window_violations": "pytest_ctxeval.strategies.window_rules",
    "load_scenarios": "pytest_ctxeval.scenario.loader",
    "ResultRecord": "pytest_ctxeval.results.record",
    "load_results": "pytest_ctxeval.results.store",
    "results_frame": "pytest_ctxeval.results.analysis",
    "strategy_table": "pytest_ctxeval.results.analysis",
    "pass_rate_matrix": "pytest_ctxeval.results.analysis",
    "pareto_front": "pytest_ctxeval.results.analysis",
    "task_costs": "pytest_ctxeval.results.analysis",
}

# Spelled out (not computed) so type checkers and linters can read it.
__all__ = [
    "BaseStrategy",
    "ContextStrategy",
    "Message",
    "ResultRecord",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "StrategyContext",
    "Window",
    "__version__",
    "assert_invariants",
    "check_invariants",
    "content_text",
    "load_results",
    "load_scenarios",
    "load_strategy",
    "pareto_front",
    "pass_rate_matrix",
    "results_frame",
    "strategy_table",
    "task_costs",
    "register_strategy",
    "window_violations",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ctxeval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
