"""Evidence survival per strategy: of the facts a dataset marks as the
evidence for its answers, how many each strategy kept verbatim, kept
transformed, kept only in its store, or lost.

A probe's evidence is the needles it cites (``evidence:`` in the scenario;
the importers plant LoCoMo's cited turns and the tau-bench tool outputs a
probe asks about as needles named ``evidence-…`` and cite them).  Each is
counted at the probes that cite it, so a fact many questions rest on weighs
more; a probe that cites nothing (an adversarial question) counts nothing.
Model-free: it says whether the evidence was there, not whether the model
used it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..results.record import ResultRecord

STATES = ("verbatim", "transformed", "in_store", "gone")


@dataclass(frozen=True)
class EvidenceSurvival:
    """One strategy's counts of evidence facts in each survival state."""

    strategy: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def share(self, state: str) -> float:
        return self.counts[state] / self.total if self.total else 0.0


def evidence_survival(records: list[ResultRecord]) -> list[EvidenceSurvival]:
    """Per strategy (sorted by name), how its evidence facts fared; empty
    when no record has an evidence fact."""
    per_strategy: dict[str, Counter[str]] = {}
    for record in records:
        states = [record.fact_survival[f] for f in _evidence_of(record)]
        if states:
            per_strategy.setdefault(record.strategy, Counter()).update(states)
    return [
        EvidenceSurvival(name, {state: counts[state] for state in STATES})
        for name, counts in sorted(per_strategy.items())
    ]


def _evidence_of(record: ResultRecord) -> list[str]:
    """The facts the probe cites, as far as fact survival tracked them."""
    return [f for f in record.evidence if f in record.fact_survival]


def evidence_lines(records: list[ResultRecord]) -> list[str]:
    """The terminal summary's evidence table: a header, one aligned line per strategy."""
    rows = evidence_survival(records)
    if not rows:
        return []
    width = max(len(r.strategy) for r in rows)
    lines = ["evidence survival (the evidence each probe cites):"]
    for row in rows:
        cells = "  ".join(f"{state} {row.share(state):>4.0%}" for state in STATES)
        lines.append(f"{row.strategy:<{width}}  {cells}  (n={row.total})")
    return lines


def evidence_markdown(records: list[ResultRecord]) -> list[str]:
    """The Markdown summary's evidence table, or nothing without evidence facts."""
    rows = evidence_survival(records)
    if not rows:
        return []
    lines = [
        "",
        "### Evidence survival",
        "",
        "| strategy | " + " | ".join(STATES) + " | evidence facts |",
        "|---|" + "---:|" * (len(STATES) + 1),
    ]
    for row in rows:
        cells = " | ".join(f"{row.counts[s]} ({row.share(s):.0%})" for s in STATES)
        name = row.strategy.replace("|", "\\|")
        lines.append(f"| {name} | {cells} | {row.total} |")
    return lines
