"""Reading an option's value: each converted, or one usage error naming the
option, the bad value and what it takes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import pytest

from .table import FAIL_ON, RECORD_MODES

_N = TypeVar("_N", int, float)
_SWEEP_ON = ("true", "yes", "on")
_SWEEP_OFF = ("false", "no", "off")


def _one_of(flag: str, value: str, choices: Iterable[str]) -> str:
    if value not in choices:
        raise pytest.UsageError(
            f"{flag}: invalid value {value!r}; expected one of: {', '.join(choices)}"
        )
    return value


def _number(
    flag: str,
    value: str,
    convert: Callable[[str], _N],
    accept: Callable[[_N], bool],
    expected: str,
) -> _N:
    """``value`` converted, or one usage error naming the option, the value and what it takes."""
    try:
        number = convert(value)
    except ValueError:
        number = None
    # ``accept`` is written so NaN fails it ("not x > 0" would let NaN through).
    if number is None or not accept(number):
        raise pytest.UsageError(f"{flag}: invalid value {value!r}; expected {expected}")
    return number


def fail_on(value: str) -> str:
    return _one_of("--ctx-fail-on", value, FAIL_ON)


def mode(value: str | None) -> str | None:
    return None if value is None else _one_of("--ctx-mode", value, ("replay", "rollout"))


def record_mode(value: str) -> str:
    return _one_of("--ctx-record", value, RECORD_MODES)


def at_least_one(flag: str, value: str) -> int:
    return _number(flag, value, int, lambda n: n >= 1, "a whole number >= 1")


def breaker(value: str) -> int:
    return _number("--ctx-breaker", value, int, lambda n: n >= 0, "a whole number >= 0")


def seconds(value: str) -> float:
    return _number("--ctx-timeout", value, float, lambda n: n > 0, "a number of seconds > 0")


def agreement(value: str) -> float:
    return _number(
        "--ctx-agreement",
        value,
        float,
        lambda n: 0.0 < n <= 1.0,
        "a number in (0, 1], e.g. 0.6 (1 = equal after normalisation)",
    )


def cache_model(value: str | None) -> str | None:
    if value is None:
        return None
    from ..llm.cache_rules import RULES

    return _one_of("--ctx-cache-model", value, RULES)


def seconds_per_turn(value: str) -> float:
    return _number(
        "--ctx-seconds-per-turn", value, float, lambda n: n >= 0, "a number of seconds >= 0"
    )


def tokenizer_file(value: str | None, base: Path) -> Path | None:
    if value is None:
        return None
    path = (base / value).expanduser().resolve()
    if not path.is_file():
        raise pytest.UsageError(
            f"--ctx-tokenizer: no such file {value!r}; "
            "expected a tokenizer.json or a .gguf model file"
        )
    return path


def context_window(value: str | None) -> int | None:
    if value is None:
        return None
    return _number(
        "--ctx-context-window",
        value,
        lambda text: int(text.replace(",", "").replace("_", "")),
        lambda n: n >= 1,
        "a number of tokens >= 1",
    )


def sweep(value: str | None) -> int | None:
    """--ctx-sweep's K: 1 alone (or true in the ini), None when off."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in _SWEEP_ON:
        return 1
    if text in _SWEEP_OFF:
        return None
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(
            f"--ctx-sweep: invalid value {value!r}; expected a whole number K >= 1 "
            "(ask each probe at every K-th user turn), or the flag alone for every turn; "
            "a path right after --ctx-sweep is read as K: write --ctx-sweep=K"
        )
    return int(text)


def budgets(value: str | None) -> tuple[int, ...]:
    """--ctx-budget's token budgets, ascending, each once."""
    if value is None:
        return ()
    budgets = set()
    for part in value.split(","):
        text = part.strip().replace("_", "")
        if not text.isdigit() or int(text) < 1:
            raise pytest.UsageError(
                f"--ctx-budget: invalid value {value!r} ({part.strip()!r} is not a number "
                "of tokens >= 1); expected whole numbers, comma-separated, e.g. 1000,2000,4000"
            )
        budgets.add(int(text))
    return tuple(sorted(budgets))
