"""Fact-ledger rules of ``--ctx-fail-if``: ``[STRATEGY:]STATE:>N`` fails the
run when more than N facts reached STATE at some request of a session
(``mutated:>0``: any mutation fails).  They read the records' fact ledgers
only, so unlike the budget rules they need no baseline."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..results.record import ResultRecord

STATES = ("mutated", "gone", "in_store", "transformed")
_RULE = re.compile(r"^(?:(?P<strategy>[^:]+):)?(?P<state>[a-z_]+):>(?P<limit>\d+)$")


@dataclass(frozen=True)
class LedgerRule:
    text: str
    state: str
    limit: int
    strategy: str | None = None


def split_ledger_rules(text: str) -> tuple[list[LedgerRule], str]:
    """The ledger rules of ``text`` and the rest (budget rules), comma- or
    semicolon-separated; a bad ledger rule raises ValueError quoting it."""
    rules: list[LedgerRule] = []
    rest: list[str] = []
    for part in re.split(r"[,;](?![^(]*\))", text):
        written = part.strip().replace(" ", "")
        if ":>" not in written:
            if written:
                rest.append(part.strip())
            continue
        match = _RULE.match(written)
        if match is None or match["state"] not in STATES:
            raise ValueError(
                f"invalid rule {part.strip()!r}; expected [STRATEGY:]STATE:>N with STATE one "
                f"of {', '.join(STATES)} and N a whole number, e.g. 'mutated:>0'"
            )
        rules.append(LedgerRule(written, match["state"], int(match["limit"]), match["strategy"]))
    return rules, ",".join(rest)


def usage_split(text: str) -> tuple[tuple[LedgerRule, ...], str]:
    """``split_ledger_rules`` for ``--ctx-fail-if``: a bad rule is a usage error."""
    import pytest

    try:
        rules, rest = split_ledger_rules(text)
    except ValueError as exc:
        raise pytest.UsageError(f"--ctx-fail-if: {exc}") from None
    return tuple(rules), rest


def ledger_breaches(rules: list[LedgerRule], records: list[ResultRecord]) -> list[str]:
    """One line per broken rule and strategy, naming the facts."""
    lines = []
    for rule in rules:
        hits: dict[str, set[str]] = {}
        for record in records:
            if rule.strategy is not None and record.strategy != rule.strategy:
                continue
            ledger: dict[str, Any] = getattr(record, "fact_ledger", None) or {}
            for fact, runs in ledger.items():
                at = _first(runs, rule.state)
                if at is not None:
                    hits.setdefault(record.strategy, set()).add(
                        f"{record.scenario}::{fact} at request {at}"
                    )
        for strategy, facts in sorted(hits.items()):
            if len(facts) > rule.limit:
                shown = ", ".join(sorted(facts)[:5]) + (" …" if len(facts) > 5 else "")
                lines.append(
                    f"{strategy}: {len(facts)} fact(s) {rule.state} ({shown}) "
                    f"[--ctx-fail-if {rule.text}]"
                )
    return lines


def ledger_exit(
    rules: Sequence[LedgerRule], records: list[ResultRecord], status: int
) -> tuple[list[str], int]:
    """The broken rules, and the run's exit status: a passing run with one
    broken fails as a broken budget rule does (exit code 6)."""
    from .exitcodes import GateExit

    breaches = ledger_breaches(list(rules), records)
    return breaches, (int(GateExit.BUDGET) if breaches and status == 0 else status)


def _first(runs: list[Any], state: str) -> int | None:
    at = 1
    for run in runs:
        if run[0] == state:
            return at
        at += int(run[1])
    return None
