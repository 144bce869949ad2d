"""A run's records against the baseline: what regressed, what improved, what
is new, and which baseline probes the run lacks.

Each probe's decision is the cell of ``table.TABLE`` for its baseline and run
outcomes.  A baseline probe the run lacks is, by ``scope``: out of the run's
scope (another strategy, shard or -k selection), still in the scenarios (the
results are incomplete), or gone from them, where a new probe of the same
scenario file, strategy and probe text takes its place (renamed) or nothing
does (unmatched).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..results.record import ResultRecord
from ..show_command import show_command
from .baseline import Baseline, BaselineEntry, Key, record_key
from .table import ABSENT, Decision, Outcome, decide, outcome_of

# Where a baseline probe the run lacks stands: see compare().
Scope = Literal["out", "expected", "gone"]
ContentKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class Change:
    """One probe whose outcome moved against the baseline."""

    key: Key
    before: str
    after: str
    why: str
    nodeid: str = ""
    command: str = ""
    # The baseline's key when the probe was matched by content (renamed).
    was_key: Key | None = None

    @property
    def name(self) -> str:
        return self.nodeid or "::".join(self.key)

    @property
    def show_command(self) -> str:
        """The command that prints the exact window the strategy sent."""
        if self.command:
            return self.command
        scenario_file, scenario, strategy, probe = self.key
        return shlex.join(
            ["ctxeval", "show", scenario_file, "--id", scenario, "--strategy", strategy]
            + ["--probe", probe]
        )


@dataclass
class Comparison:
    regressions: list[Change] = field(default_factory=list)
    improvements: list[Change] = field(default_factory=list)
    known_losses: list[Key] = field(default_factory=list)
    new: list[Key] = field(default_factory=list)
    # Not gated, worth a look: a model miss after a pass, an uncheckable probe.
    notes: list[Change] = field(default_factory=list)
    # Baseline key -> the run's key of the same probe under a new id.
    renamed: dict[Key, Key] = field(default_factory=dict)
    # In the scenarios still, not in the results: the run is incomplete.
    missing: list[Key] = field(default_factory=list)
    # Gone from the scenarios and matched by no new probe.
    removed: list[Key] = field(default_factory=list)

    @property
    def regressed_keys(self) -> set[Key]:
        return {change.key for change in self.regressions}


def entry_outcome(entry: BaselineEntry | None) -> Outcome:
    if entry is None:
        return ABSENT
    return outcome_of(entry.classification, entry.verdict, entry.pass_rate, entry.repeat)


def record_outcome(record: ResultRecord) -> Outcome:
    return outcome_of(record.classification, record.verdict, record.pass_rate, record.repeat)


def decision(before: BaselineEntry | None, after: ResultRecord) -> Decision:
    return decide(entry_outcome(before), record_outcome(after))


def content_key(item: BaselineEntry | ResultRecord) -> ContentKey | None:
    """What identifies a probe when its ids changed: its scenario file, the
    strategy, its text and its sweep point; None without a probe digest."""
    if not item.probe_digest:
        return None
    _, at, turn = item.probe.partition("@")
    return (item.scenario_file, item.strategy, item.probe_digest, at + turn)


def match_by_content(
    entries: Iterable[BaselineEntry], records: Iterable[ResultRecord]
) -> dict[Key, ResultRecord]:
    """Baseline entries paired with new records of the same content, where
    the pairing is one to one (a matrix of look-alike probes stays unmatched)."""
    by_content: dict[ContentKey, list[BaselineEntry]] = {}
    for entry in entries:
        if (content := content_key(entry)) is not None:
            by_content.setdefault(content, []).append(entry)
    candidates: dict[ContentKey, list[ResultRecord]] = {}
    for record in records:
        if (content := content_key(record)) is not None:
            candidates.setdefault(content, []).append(record)
    return {
        olds[0].key: candidates[content][0]
        for content, olds in by_content.items()
        if len(olds) == 1 and len(candidates.get(content, ())) == 1
    }


def compare(
    records: list[ResultRecord],
    baseline: Baseline,
    scope: Callable[[Key], Scope] | None = None,
) -> Comparison:
    """``scope`` tells where a baseline probe the run lacks stands; without it
    every such probe counts as gone from the scenarios."""
    known = baseline.by_key()
    result = Comparison()
    ran = {record_key(r): r for r in records}
    lacking = [key for key in sorted(known) if key not in ran]
    gone: list[BaselineEntry] = []
    for key in lacking:
        where = scope(key) if scope is not None else "gone"
        if where == "expected":
            result.missing.append(key)
        elif where == "gone":
            gone.append(known[key])
    fresh = [r for key, r in ran.items() if key not in known]
    renamed = match_by_content(gone, fresh)
    before_of: dict[Key, BaselineEntry] = {}
    for old, record in renamed.items():
        result.renamed[old] = record_key(record)
        before_of[record_key(record)] = known[old]
    result.removed = [e.key for e in gone if e.key not in renamed]
    for key in sorted(ran):
        record = ran[key]
        before = known.get(key) or before_of.get(key)
        _add(result, key, before, record)
    return result


def _add(result: Comparison, key: Key, before: BaselineEntry | None, record: ResultRecord) -> None:
    was, now = entry_outcome(before), record_outcome(record)
    cell = decide(was, now)

    def change() -> Change:
        return Change(
            key,
            was.shown(),
            now.shown(),
            cell.why,
            record.nodeid,
            show_command(record) or "",
            before.key if before is not None and before.key != key else None,
        )

    if cell.regression:
        result.regressions.append(change())
    elif cell.improvement:
        result.improvements.append(change())
    elif cell.symbol == "U" or (cell.symbol == "M" and was.passes):
        result.notes.append(change())
    if before is None:
        result.new.append(key)
    elif record.classification == "context_loss" and not cell.regression:
        result.known_losses.append(key)


def item_decision(record: ResultRecord, before: BaselineEntry | None) -> tuple[str, str]:
    """How one item ends under the gate: ``("fail" | "xfail" | "pass", reason)``.

    Only a regression or an error fails. Any other failing outcome (a known
    loss, a loss on a probe the baseline does not have yet, a model miss) is
    shown as xfail with the reason, so pytest's counts still show it."""
    if record.classification == "error":
        return "fail", "error"
    was = entry_outcome(before)
    cell = decide(was, record_outcome(record))
    if cell.regression:
        return "fail", f"regression against the baseline: {cell.why} (was {was.shown()})"
    if record.verdict == "pass":
        return "pass", ""
    if before is None:
        return "xfail", f"{record.classification} on a probe that is not in the baseline yet"
    if record.classification == before.classification:
        return "xfail", f"known {record.classification} (recorded in the baseline)"
    return "xfail", f"{record.classification}, was {was.shown()}: not a regression ({cell.why})"
