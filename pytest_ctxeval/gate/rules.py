"""Budget rules (``--ctx-fail-if``), in the style of pytest-benchmark's compare-fail.

A rule is ``[STRATEGY:]METRIC:CHANGE``. The sign of CHANGE is the direction
that hurts: ``tokens:+10%`` fails a strategy whose tokens rose by more than
10 %, ``pass_rate:-0.05`` one whose pass rate fell by more than 0.05. Each
rule is checked per strategy, over the probes the run shares with the
baseline, so added or removed scenarios do not move the numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..results.record import ResultRecord
from .baseline import Baseline, BaselineEntry, Key, record_key

if TYPE_CHECKING:
    import pandas as pd

METRICS: dict[str, str] = {
    "tokens": "cumulative input tokens (each simulated session counted once)",
    "prompt_tokens": "mean prompt tokens at the probe",
    "cost": "cost in USD",
    "pass_rate": "fraction of probes passed (mean pass rate when repeated)",
    "context_loss": "number of context_loss probes",
}

_RULE = re.compile(
    r"^(?:(?P<strategy>[^:]+):)?(?P<metric>[a-z_]+):(?P<change>[+-](?:\d+(?:\.\d*)?|\.\d+))(?P<pct>%?)$"
)


class RuleError(ValueError):
    """A rule that cannot be parsed; the message quotes it."""


@dataclass(frozen=True)
class Rule:
    text: str
    metric: str
    limit: float  # the allowed change, signed in the direction that hurts
    relative: bool
    strategy: str | None = None

    def breach(self, before: float, after: float) -> str | None:
        """A description of the breach, or None when within the limit."""
        change = after - before
        if self.relative:
            if before == 0:
                allowed = change == 0 or (change > 0) != (self.limit > 0)
                return None if allowed else f"{_num(before)} -> {_num(after)} (from zero)"
            change = change / abs(before)
        worse = change > self.limit if self.limit > 0 else change < self.limit
        if not worse:
            return None
        shown = f"{change:+.1%}" if self.relative else f"{change:+.4g}"
        return f"{_num(before)} -> {_num(after)} ({shown}; allowed {_limit(self)})"


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.4g}"


def _limit(rule: Rule) -> str:
    return f"{rule.limit * 100:+g}%" if rule.relative else f"{rule.limit:+g}"


def _split(text: str) -> list[str]:
    """Split on commas and semicolons outside parentheses: a strategy name
    may carry parameters, as in ``headtail(head=50,tail=50):tokens:+10%``."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char in ",;" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def parse_rules(text: str) -> list[Rule]:
    """Rules separated by commas or semicolons; a bad one raises RuleError quoting it."""
    rules = []
    for part in _split(text):
        part = part.strip()
        if not part:
            continue
        match = _RULE.match(part.replace(" ", ""))
        if not match:
            raise RuleError(
                f"invalid rule {part!r}; expected [STRATEGY:]METRIC:CHANGE such as "
                "'tokens:+10%', 'cost:+5%' or 'headtail:pass_rate:-0.05'"
            )
        metric = match["metric"]
        if metric not in METRICS:
            raise RuleError(
                f"invalid rule {part!r}: unknown metric {metric!r}; "
                f"expected one of: {', '.join(METRICS)}"
            )
        relative = bool(match["pct"])
        limit = float(match["change"]) / (100 if relative else 1)
        if limit == 0:
            raise RuleError(f"invalid rule {part!r}: give the change with a sign and a size")
        rules.append(Rule(part, metric, limit, relative, match["strategy"]))
    return rules


@dataclass(frozen=True)
class Breach:
    rule: Rule
    strategy: str
    detail: str

    def __str__(self) -> str:
        return f"{self.strategy}: {self.rule.metric} {self.detail} [--ctx-fail-if {self.rule.text}]"


def _frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    # pandas is imported here: parsing rules at start-up must stay cheap.
    import pandas as pd

    return pd.DataFrame.from_records(
        rows,
        columns=[
            "strategy",
            "session",
            "cumulative_input_tokens",
            "prompt_tokens",
            "cost_usd",
            "session_cost_usd",
            "passed",
            "context_loss",
        ],
    )


def _metrics(frame: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: every metric in METRICS."""
    by_strategy = frame.groupby("strategy")
    # Session figures repeat in each probe's record: count them once per session.
    sessions = frame.groupby(["strategy", "session"])[
        ["cumulative_input_tokens", "session_cost_usd"]
    ].max()
    per_strategy = sessions.groupby(level="strategy").sum()
    import pandas as pd

    return pd.DataFrame(
        {
            "tokens": per_strategy["cumulative_input_tokens"],
            "prompt_tokens": by_strategy["prompt_tokens"].mean(),
            # The session's requests once, plus each probe's own asks.
            "cost": per_strategy["session_cost_usd"] + by_strategy["cost_usd"].sum(),
            "pass_rate": by_strategy["passed"].mean(),
            "context_loss": by_strategy["context_loss"].sum(),
        }
    )


def _row(item: ResultRecord | BaselineEntry) -> dict[str, object]:
    """A record of this run and a baseline entry, measured alike."""
    passed = item.pass_rate if item.pass_rate is not None else float(item.verdict == "pass")
    return {
        "strategy": item.strategy,
        "session": (item.scenario_file, item.scenario),
        "cumulative_input_tokens": item.cumulative_input_tokens,
        "prompt_tokens": item.prompt_tokens,
        "cost_usd": item.cost_usd,
        "session_cost_usd": item.session_cost_usd,
        "passed": passed,
        "context_loss": int(item.classification == "context_loss"),
    }


def check_rules(rules: list[Rule], records: list[ResultRecord], baseline: Baseline) -> list[Breach]:
    if not rules:
        return []
    known = baseline.by_key()
    shared: set[Key] = {record_key(r) for r in records} & set(known)
    after = _frame([_row(r) for r in records if record_key(r) in shared])
    before = _frame([_row(e) for key, e in known.items() if key in shared])
    if after.empty:
        return []
    # Plain dicts of floats: {metric: {strategy: value}}.
    now = _metrics(after).astype(float).to_dict()
    was = _metrics(before).astype(float).to_dict()
    breaches = []
    for rule in rules:
        after_by, before_by = now[rule.metric], was[rule.metric]
        strategies = [rule.strategy] if rule.strategy else sorted(after_by)
        for strategy in strategies:
            if strategy not in after_by or strategy not in before_by:
                continue
            detail = rule.breach(before_by[strategy], after_by[strategy])
            if detail:
                breaches.append(Breach(rule, strategy, detail))
    return breaches
