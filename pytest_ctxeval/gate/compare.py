"""A run's records against the baseline: what regressed, what improved, what is new.

The default rule fails a probe that was not a known context loss and now is
one, or whose pass rate fell credibly (repeated runs, Wilson bounds apart).
A probe the model fails even with the full context (model_miss) never fails
the gate: that is the model, not the strategy. Known losses, new probes and
removed probes are reported, never failed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from ..evaluate.outcome import credibly_below
from ..results.record import ResultRecord
from .baseline import Baseline, BaselineEntry, Key, record_key


@dataclass(frozen=True)
class Change:
    """One probe whose outcome moved against the baseline."""

    key: Key
    before: str
    after: str
    why: str
    nodeid: str = ""

    @property
    def name(self) -> str:
        return self.nodeid or "::".join(self.key)

    @property
    def show_command(self) -> str:
        """The command that prints the exact window the strategy sent."""
        scenario_file, scenario, strategy, probe = self.key
        return shlex.join(
            [
                "ctxeval",
                "show",
                scenario_file,
                "--id",
                scenario,
                "--strategy",
                strategy,
                "--probe",
                probe,
            ]
        )


@dataclass
class Comparison:
    regressions: list[Change] = field(default_factory=list)
    improvements: list[Change] = field(default_factory=list)
    known_losses: list[Key] = field(default_factory=list)
    new: list[Key] = field(default_factory=list)
    removed: list[Key] = field(default_factory=list)

    @property
    def regressed_keys(self) -> set[Key]:
        return {change.key for change in self.regressions}


def _rates(pass_rate: float | None, repeat: int) -> tuple[int, int] | None:
    if pass_rate is None:
        return None
    return round(pass_rate * repeat), repeat


def _outcome(classification: str, pass_rate: float | None, repeat: int) -> str:
    if repeat > 1 and pass_rate is not None:
        return f"{classification} ({round(pass_rate * repeat)}/{repeat})"
    return classification


def regression(before: BaselineEntry, after: ResultRecord) -> str | None:
    """Why ``after`` is a regression against ``before``, or None."""
    if after.classification == "context_loss" and before.classification != "context_loss":
        return "now a context loss"
    now = _rates(after.pass_rate, after.repeat)
    was = _rates(before.pass_rate, before.repeat)
    if (
        now
        and was
        and after.classification not in ("model_miss", "error")
        and (now[1] > 1 or was[1] > 1)
        and credibly_below(*now, *was)
    ):
        return "pass rate fell credibly"
    return None


def improvement(before: BaselineEntry, after: ResultRecord) -> str | None:
    if before.classification == "context_loss" and after.classification in ("ok", "rescued"):
        return "no longer a context loss"
    return None


def compare(
    records: list[ResultRecord],
    baseline: Baseline,
    in_scope: Callable[[Key], bool] | None = None,
) -> Comparison:
    """``in_scope`` tells which baseline probes this run was meant to run (its
    strategies, files, shard and -k selection); only those can be "removed"."""
    known = baseline.by_key()
    result = Comparison()
    seen: set[Key] = set()
    for record in sorted(records, key=record_key):
        key = record_key(record)
        seen.add(key)
        before = known.get(key)
        if before is None:
            result.new.append(key)
            continue
        after = _outcome(record.classification, record.pass_rate, record.repeat)
        was = _outcome(before.classification, before.pass_rate, before.repeat)
        if why := regression(before, record):
            result.regressions.append(Change(key, was, after, why, record.nodeid))
        elif why := improvement(before, record):
            result.improvements.append(Change(key, was, after, why, record.nodeid))
        elif record.classification == "context_loss":
            result.known_losses.append(key)
    result.removed = sorted(k for k in set(known) - seen if in_scope is None or in_scope(k))
    return result


def item_decision(record: ResultRecord, before: BaselineEntry | None) -> tuple[str, str]:
    """How one item ends under the gate: ``("fail" | "xfail" | "pass", reason)``.

    Only a regression or an error fails. Any other failing outcome (a known
    loss, a loss on a probe the baseline does not have yet, a model miss) is
    shown as xfail with the reason, so pytest's counts still show it."""
    if record.classification == "error":
        return "fail", "error"
    if before is not None and (why := regression(before, record)):
        was = _outcome(before.classification, before.pass_rate, before.repeat)
        return "fail", f"regression against the baseline: {why} (was {was})"
    if record.verdict == "pass":
        return "pass", ""
    if before is None:
        return "xfail", f"{record.classification} on a probe that is not in the baseline yet"
    if record.classification == before.classification:
        return "xfail", f"known {record.classification} (recorded in the baseline)"
    return "xfail", f"{record.classification}, was {before.classification}: not a regression"
