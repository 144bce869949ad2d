"""From pass/fail outcomes to a verdict and a classification.

One ask per side (the default) is the plain comparison of two verdicts.  With
``--ctx-repeat=N`` each side was asked N times, and a strategy is blamed only
when its pass rate is *credibly* below the full context's: the one-sided 95 %
Wilson bounds do not meet (the strategy's upper bound lies below the full
context's lower bound, z = 1.645).  Three failures against three passes is
credible; one pass in three against three in three is not, and is reported
``unstable`` rather than as a loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# 95 % two-sided, for the intervals in the records and reports.
INTERVAL_Z = 1.96
# 95 % one-sided, for deciding that one rate is credibly below the other.
CREDIBLE_Z = 1.645


def wilson_interval(passed: int, asked: int, z: float = INTERVAL_Z) -> tuple[float, float]:
    """The Wilson score interval of a pass rate (sound at 0 %, 100 % and small n)."""
    if asked <= 0:
        return (0.0, 1.0)
    p = passed / asked
    denominator = 1 + z * z / asked
    centre = (p + z * z / (2 * asked)) / denominator
    half = z * math.sqrt(p * (1 - p) / asked + z * z / (4 * asked * asked)) / denominator
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def credibly_below(
    passed: int, asked: int, other_passed: int, other_asked: int, z: float = CREDIBLE_Z
) -> bool:
    """Is the first pass rate credibly below the second?"""
    upper = wilson_interval(passed, asked, z)[1]
    lower = wilson_interval(other_passed, other_asked, z)[0]
    return upper < lower


@dataclass(frozen=True)
class Rates:
    passed: int
    asked: int

    @property
    def rate(self) -> float:
        return self.passed / self.asked if self.asked else 0.0

    @property
    def mixed(self) -> bool:
        return 0 < self.passed < self.asked

    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.asked)


def classify(strategy: Rates, full: Rates) -> str:
    """The classification of a probe with an expectation, asked on both sides."""
    if strategy.asked == 1 and full.asked == 1:
        return _classify_once(strategy.passed == 1, full.passed == 1)
    if credibly_below(strategy.passed, strategy.asked, full.passed, full.asked):
        return "context_loss"
    if credibly_below(full.passed, full.asked, strategy.passed, strategy.asked):
        return "rescued"
    if strategy.passed == strategy.asked and full.passed == full.asked:
        return "ok"
    if strategy.passed == 0 and full.passed == 0:
        return "model_miss"
    return "unstable"


def verdict_of(strategy: Rates) -> str:
    """Pass when at least half of the asks passed (every ask, with one)."""
    return "pass" if strategy.passed * 2 >= strategy.asked and strategy.passed > 0 else "fail"


def _classify_once(strategy_passed: bool, full_passed: bool) -> str:
    if strategy_passed:
        return "ok" if full_passed else "rescued"
    return "context_loss" if full_passed else "model_miss"
