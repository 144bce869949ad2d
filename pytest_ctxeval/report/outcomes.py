"""How pytest showed each item: passed, failed, xfailed or skipped.

The report counts items the way pytest's last line does, so the two agree:
under ``--ctx-fail-on=context_loss`` (the default) a model miss or an unstable
probe is xfailed, not failed; a probe with no ground truth and no verdict is
skipped, and so is an uncheckable one (a decoy meets its expectation).  With
a baseline the gate decides instead (see ``gate.compare.item_decision``):
only a regression or an error fails.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..gate.baseline import Key, record_key
from ..results.record import ResultRecord

OUTCOMES: tuple[str, ...] = ("failed", "passed", "xfailed", "skipped")
FAIL_ON_DEFAULT = "context_loss"


def pytest_outcome(
    record: ResultRecord, fail_on: str = FAIL_ON_DEFAULT, regressed: set[Key] | None = None
) -> str:
    """The outcome pytest gave the record's item (mirrors ``collect.ProbeItem.runtest``).

    ``regressed``: the keys a baseline comparison found regressed; given, the
    gate's rule applies."""
    if regressed is not None:
        if record.classification == "error" or record_key(record) in regressed:
            return "failed"
        return "passed" if record.verdict == "pass" else "xfailed"
    if fail_on == "never":
        return "passed"
    if record.classification == "beyond_context" and record.verdict == "error":
        return "skipped"
    if record.classification == "uncheckable":
        return "skipped"
    if record.verdict == "pass":
        return "passed"
    if fail_on == FAIL_ON_DEFAULT and record.classification in ("model_miss", "unstable"):
        return "xfailed"
    return "failed"


def outcome_counts(outcomes: Iterable[str]) -> dict[str, int]:
    """Every outcome with its count, in pytest's order (zeros included)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
