"""The gate's decision table, cell by cell: every (baseline outcome, run
outcome) pair at one ask and at three, with every pass count each outcome can
have, checked against the rule as the docs state it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pytest_ctxeval.evaluate.outcome import credibly_below
from pytest_ctxeval.gate.baseline import BaselineEntry
from pytest_ctxeval.gate.compare import item_decision
from pytest_ctxeval.gate.table import (
    OUTCOMES,
    TABLE,
    Outcome,
    decide,
    markdown_legend,
    markdown_table,
)
from pytest_ctxeval.results.record import ResultRecord

ROOT = Path(__file__).resolve().parent.parent
NO_VERDICT = ("error", "uncheckable", "absent")
# The strategy passes, yet the full context fails: a fall to model_miss is the strategy's.
FULL_CONTEXT_FAILED = ("rescued", "beyond_context-pass")


def counts(name: str, asked: int) -> list[int]:
    """The pass counts an outcome can have at ``asked`` asks."""
    if name in NO_VERDICT:
        return [0]
    half = [n for n in range(asked + 1) if n * 2 >= asked and n > 0]
    below = [n for n in range(asked + 1) if n not in half]
    if asked == 1:
        return {"unstable": []}.get(name, half if _passing(name) else below)
    return {
        # With an expectation ok is every ask; without one (agreement) at least half.
        "ok": half,
        "rescued": [asked],
        "divergent": below,
        "unstable": list(range(1, asked)),
        "model_miss": [0],
        "context_loss": [0],
        "beyond_context-pass": half,
        "beyond_context-fail": below,
    }[name]


def _passing(name: str) -> bool:
    return name in ("ok", "rescued", "beyond_context-pass")


def sides(asked: int) -> list[tuple[Outcome, Outcome]]:
    pairs = []
    for before, after in itertools.product(OUTCOMES, repeat=2):
        for was, now in itertools.product(counts(before, asked), counts(after, asked)):
            pairs.append(
                (
                    Outcome(before, was, 0 if before == "absent" else asked),
                    Outcome(after, now, 0 if after == "absent" else asked),
                )
            )
    return pairs


def expected_regression(before: Outcome, after: Outcome) -> bool:
    """The rule in the docs' words."""
    if before.name in NO_VERDICT or after.name in NO_VERDICT:
        return False  # nothing to compare with, or nothing to compare
    if after.name == "model_miss" and before.name not in FULL_CONTEXT_FAILED:
        return False  # the full context fails too: the model, not the strategy
    if before.asked > 1 or after.asked > 1:
        return credibly_below(after.passed, after.asked, before.passed, before.asked)
    return before.passes and not after.passes


def expected_improvement(before: Outcome, after: Outcome) -> bool:
    if before.name in NO_VERDICT or after.name in NO_VERDICT or after.name == "model_miss":
        return False
    if before.asked > 1 or after.asked > 1:
        return credibly_below(before.passed, before.asked, after.passed, after.asked)
    return after.passes and not before.passes


def test_the_table_has_every_pair() -> None:
    assert set(TABLE) == set(itertools.product(OUTCOMES, repeat=2))


@pytest.mark.parametrize("asked", [1, 3])
@pytest.mark.parametrize(("before", "after"), list(itertools.product(OUTCOMES, repeat=2)))
def test_every_pair_is_decided_by_the_rule(before: str, after: str, asked: int) -> None:
    pairs = [(b, a) for b, a in sides(asked) if (b.name, a.name) == (before, after)]
    if asked == 1 and "unstable" in (before, after):
        assert pairs == []  # one ask cannot be unstable; the cell serves repeated baselines
        return
    assert pairs, (before, after)
    for was, now in pairs:
        cell = decide(was, now)
        assert cell.regression == expected_regression(was, now), (was, now, cell)
        assert cell.improvement == expected_improvement(was, now), (was, now, cell)
        assert cell.why
        if "uncheckable" in (before, after) and after not in ("error", "absent"):
            assert cell.symbol == "U"
        if after == "absent":
            assert cell.symbol in "-."


@pytest.mark.parametrize(
    ("before", "after", "asked", "regressed"),
    [
        # Falls in the verdict regress whatever the new classification is called.
        (("ok", 1), ("divergent", 0), 1, True),
        (("beyond_context-pass", 1), ("beyond_context-fail", 0), 1, True),
        (("ok", 1), ("context_loss", 0), 1, True),
        (("rescued", 1), ("model_miss", 0), 1, True),
        (("ok", 3), ("divergent", 0), 3, True),
        # What the Wilson rule calls not credible never regresses.
        (("unstable", 1), ("context_loss", 0), 3, False),
        (("unstable", 2), ("context_loss", 0), 3, False),
        (("ok", 3), ("unstable", 1), 3, False),
        # The model, not the strategy.
        (("ok", 1), ("model_miss", 0), 1, False),
        # No verdict on one side: listed, never a regression.
        (("ok", 1), ("uncheckable", 0), 1, False),
        (("uncheckable", 0), ("context_loss", 0), 1, False),
    ],
)
def test_the_cases_the_issue_names(
    before: tuple[str, int], after: tuple[str, int], asked: int, regressed: bool
) -> None:
    cell = decide(Outcome(before[0], before[1], asked), Outcome(after[0], after[1], asked))
    assert cell.regression is regressed, cell


def _record(classification: str, verdict: str, pass_rate: float, repeat: int) -> ResultRecord:
    return ResultRecord.model_construct(
        **{
            **ResultRecord(
                scenario="s",
                strategy="x",
                model="m",
                probe="p",
                verdict="pass",
                classification="ok",
            ).model_dump(),
            "classification": classification,
            "verdict": verdict,
            "pass_rate": pass_rate,
            "repeat": repeat,
        }
    )


def test_items_fail_exactly_on_regressions_and_errors() -> None:
    before = BaselineEntry(
        scenario_file="a.yaml",
        scenario="s",
        strategy="x",
        probe="p",
        classification="ok",
        verdict="pass",
        pass_rate=1.0,
    )
    assert item_decision(_record("divergent", "fail", 0.0, 1), before)[0] == "fail"
    assert item_decision(_record("uncheckable", "fail", 0.0, 1), before)[0] == "xfail"
    assert item_decision(_record("uncheckable", "pass", 1.0, 1), before) == ("pass", "")
    unstable = before.model_copy(
        update={"classification": "unstable", "verdict": "fail", "pass_rate": 1 / 3, "repeat": 3}
    )
    outcome, reason = item_decision(_record("context_loss", "fail", 0.0, 3), unstable)
    assert outcome == "xfail" and "not credible" in reason


@pytest.mark.parametrize("doc", ["README.md", "docs/ci.md"])
def test_the_docs_show_the_table_the_gate_uses(doc: str) -> None:
    # Indented as a list item's part in docs/ci.md: compared line by line.
    text = "\n".join(line.strip() for line in (ROOT / doc).read_text("utf-8").splitlines())
    assert markdown_table() in text
    assert markdown_legend() in text
