"""What strategy authors import from the package: explicit, importable, typed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


STRATEGY = """
from pytest_ctxeval import BaseStrategy, Message, Window, check_invariants, content_text


class KeepAll(BaseStrategy):
    name = "keep-all"

    def window(self) -> Window:
        return Window(messages=list(self.history))


def texts(messages: list[Message]) -> list[str]:
    return [content_text(m) for m in messages]


problems: list[str] = check_invariants(KeepAll)
wrong: int = Window(messages=[])  # a type checker must flag this line
"""


def test_a_strategy_module_type_checks_against_the_real_types(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the dev extra")
    module = tmp_path / "my_strategy.py"
    module.write_text(STRATEGY)
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(module)],
        capture_output=True,
        text=True,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    # Exactly the planted mistake: the exports are typed, not Any.
    assert len(errors) == 1, out.stdout
    assert 'Incompatible types in assignment (expression has type "Window"' in errors[0]
