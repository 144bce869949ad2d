"""What strategy authors import from the package: explicit and importable.

That the exports are typed is checked by `mypy --strict` over
tests/typing/author_strategy.py, in `.ci/run`."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_ctxeval

AUTHOR_NAMES = (
    "BaseStrategy",
    "ContextStrategy",
    "Message",
    "StrategyContext",
    "Window",
    "check_invariants",
    "content_text",
)


def test_every_export_is_listed_and_importable() -> None:
    assert set(pytest_ctxeval.__all__) == {*pytest_ctxeval._EXPORTS, "__version__"}
    for name in pytest_ctxeval.__all__:
        assert getattr(pytest_ctxeval, name) is not None
    assert set(AUTHOR_NAMES) <= set(pytest_ctxeval.__all__)


def test_importing_the_package_loads_none_of_it() -> None:
    code = (
        "import sys, pytest_ctxeval; "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_ctxeval')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['pytest_ctxeval']"


def test_load_strategy_builds_a_strategy_from_command_line_text() -> None:
    """A team drives a strategy from its own tests: the same text as
    --ctx-strategy, then ``add`` and ``window()``."""
    assert "load_strategy" in pytest_ctxeval.__all__
    strategy = pytest_ctxeval.load_strategy("sliding(turns=1)")
    assert strategy.name == "sliding"
    session = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
    ]
    for message in session:
        strategy.add(message)
    assert strategy.window().messages == [session[0], session[3]]
    from pytest_ctxeval.strategies import UnknownStrategyError

    with pytest.raises(UnknownStrategyError, match="unknown strategy 'slidin'"):
        pytest_ctxeval.load_strategy("slidin")
