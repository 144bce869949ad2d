"""The gate over one pytest run: load the baseline, decide each item, and at
the end compare, check the budget rules, write the new baseline and choose
the exit code."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..results.record import ResultRecord
from .baseline import (
    Baseline,
    BaselineEntry,
    BaselineError,
    Key,
    baseline_from_records,
    read_baseline,
    record_key,
    write_baseline,
)
from .compare import Comparison, Scope, compare, content_key, item_decision
from .exitcodes import MEANING, GateExit, gate_exit
from .rules import Breach, Rule, check_rules
from .shard import in_shard, shard_of


@dataclass
class GateResult:
    comparison: Comparison | None
    breaches: list[Breach]
    exit: GateExit
    baseline_written: Path | None = None
    # The shard count the results came from (None: not sharded), for the
    # "N probes of shard i/n missing" line.
    shards: int | None = None
    allow_removed: bool = False
    # The commit the baseline was written at, for "was ok in the baseline of <commit>".
    baseline_commit: str = ""

    @property
    def headline(self) -> str:
        """One line for the report's header: what the gate decided."""
        if self.comparison is None:
            return "baseline written; nothing compared"
        n = len(self.comparison.regressions)
        verdict = "passed" if self.exit is GateExit.OK else f"failed (exit {int(self.exit)})"
        said = f"{n} regression{'s' if n != 1 else ''}"
        if self.exit is not GateExit.OK:
            said += f"; {MEANING[self.exit]}"
        return f"gate {verdict}: {said}"

    def lines(self) -> list[str]:
        """The terminal's explanation: what regressed, from what to what, and
        the command that shows the window."""
        lines: list[str] = []
        comparison = self.comparison
        if comparison is not None:
            n = len(comparison.regressions)
            lines.append(f"gate: {n} regression{'s' if n != 1 else ''} against the baseline")
            for change in comparison.regressions:
                lines.append(f"  REGRESSED {change.name}: {change.before} -> {change.after}")
                lines.append(f"    {change.show_command}")
            for change in comparison.improvements:
                lines.append(f"  improved  {change.name}: {change.before} -> {change.after}")
            for change in comparison.notes:
                lines.append(
                    f"  not gated {change.name}: {change.before} -> {change.after} ({change.why})"
                )
            for old, new in comparison.renamed.items():
                lines.append(f"  renamed   {'::'.join(old)} -> {'::'.join(new)} (same text)")
            counts = [
                (len(comparison.known_losses), "known context losses"),
                (len(comparison.new), "probes not in the baseline (not gated)"),
            ]
            shown = [f"{k} {what}" for k, what in counts if k]
            if shown:
                lines.append("  " + "; ".join(shown))
            if comparison.missing:
                lines.append(incomplete_line(comparison.missing, self.shards))
            if comparison.removed:
                lines.append(self._unmatched_line(comparison.removed))
        for breach in self.breaches:
            lines.append(f"  BUDGET    {breach}")
        if self.baseline_written is not None:
            lines.append(f"baseline written: {self.baseline_written}")
        if self.exit is not GateExit.OK:
            lines.append(f"gate exit code {int(self.exit)}: {MEANING[self.exit]}")
        return lines

    def _unmatched_line(self, removed: list[Key]) -> str:
        n = len(removed)
        text = (
            f"gate: {n} baseline probe{'s' if n != 1 else ''} unmatched: gone from the "
            "scenarios, and no probe of the same file, strategy and text replaces "
            f"{'them' if n != 1 else 'it'} (e.g. {'::'.join(removed[0])})"
        )
        if self.allow_removed:
            return text + "; allowed by --ctx-allow-removed"
        return text + "; update the baseline, or pass --ctx-allow-removed"


def incomplete_line(missing: list[Key], shards: int | None) -> str:
    """``results incomplete: 12 probes of shard 2/3 missing``."""
    if not shards or shards < 2:
        n = len(missing)
        return (
            f"results incomplete: {n} probe{'s' if n != 1 else ''} missing that the scenarios "
            f"still have (e.g. {'::'.join(missing[0])})"
        )
    by_shard = Counter(shard_of(key[0], key[1], shards) for key in missing)
    parts = [
        f"{count} probe{'s' if count != 1 else ''} of shard {index}/{shards}"
        for index, count in sorted(by_shard.items())
    ]
    return f"results incomplete: {', '.join(parts)} missing"


@dataclass
class Gate:
    path: Path
    update: bool
    rules: tuple[Rule, ...] = ()
    shard: tuple[int, int] | None = None
    allow_removed: bool = False
    baseline: Baseline | None = None
    _entries: dict[Key, BaselineEntry] = field(default_factory=dict)
    # The probes this process collected, to tell a renamed probe's old entry.
    _collected: set[Key] = field(default_factory=set)

    def load(self) -> None:
        """Read the baseline; a missing one is fine only when writing it.
        Raises BaselineError."""
        if self.update and not self.path.exists():
            self.baseline = None
            return
        self.baseline = read_baseline(self.path)
        self._entries = self.baseline.by_key()

    def note_collected(self, keys: set[Key]) -> None:
        self._collected |= keys

    def decide(self, record: ResultRecord) -> tuple[str, str]:
        """How the item of ``record`` ends: see compare.item_decision. While
        the baseline is being written, the run itself is the baseline."""
        if self.update:
            return item_decision(record, BaselineEntry.from_record(record))
        return item_decision(record, self._before(record))

    def _before(self, record: ResultRecord) -> BaselineEntry | None:
        """The record's baseline entry, by id or, renamed, by content."""
        before = self._entries.get(record_key(record))
        if before is not None or (content := content_key(record)) is None:
            return before
        same = [
            entry
            for key, entry in self._entries.items()
            if key not in self._collected and content_key(entry) == content
        ]
        return same[0] if len(same) == 1 else None

    def finish(
        self,
        records: list[ResultRecord],
        *,
        ran: set[tuple[str, str]],
        selected: set[Key],
        filtered: bool,
        model: str,
        plugin_version: str,
        git_commit: str | None = None,
    ) -> GateResult:
        """``ran``: the (scenario file, strategy) pairs this run selected;
        ``selected``: the probes it selected; ``filtered``: -k, -m or node ids
        narrowed the run, so a baseline probe that did not run may just be
        deselected, not removed."""

        def in_scope(key: Key) -> bool:
            return not filtered and (key[0], key[2]) in ran and in_shard(self.shard, key[0], key[1])

        swept = any("@" in key[3] for key in selected)

        def scope(key: Key) -> Scope:
            if key in selected:
                return "expected"
            if "@" in key[3] and not swept:  # a --ctx-sweep point; this run did not sweep
                return "out"
            return "gone" if in_scope(key) else "out"

        errors = sum(r.classification == "error" for r in records)
        if self.update:
            kept = [
                e for e in (self.baseline.entries if self.baseline else []) if not in_scope(e.key)
            ]
            fresh = baseline_from_records(
                records,
                model=model,
                plugin_version=plugin_version,
                git_commit=git_commit or "",
                created=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            )
            seen = {e.key for e in fresh.entries}
            fresh.entries = sorted(
                [*fresh.entries, *(e for e in kept if e.key not in seen)], key=lambda e: e.key
            )
            write_baseline(self.path, fresh)
            return GateResult(
                None, [], gate_exit(regressions=0, breaches=0, errors=errors), self.path
            )
        assert self.baseline is not None
        comparison = compare(records, self.baseline, scope)
        breaches = check_rules(list(self.rules), records, self.baseline)
        code = gate_exit(
            regressions=len(comparison.regressions),
            breaches=len(breaches),
            errors=errors,
            missing=len(comparison.missing),
            unmatched=0 if self.allow_removed else len(comparison.removed),
        )
        shards = self.shard[1] if self.shard else None
        return GateResult(
            comparison,
            breaches,
            code,
            shards=shards,
            allow_removed=self.allow_removed,
            baseline_commit=self.baseline.git_commit,
        )


__all__ = ["BaselineError", "Gate", "GateResult", "incomplete_line"]
