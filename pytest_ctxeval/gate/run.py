"""The gate over one pytest run: load the baseline, decide each item, and at
the end compare, check the budget rules, write the new baseline and choose
the exit code."""

from __future__ import annotations

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
    write_baseline,
)
from .compare import Comparison, compare, item_decision
from .exitcodes import GateExit, gate_exit
from .rules import Breach, Rule, check_rules
from .shard import in_shard


@dataclass
class GateResult:
    comparison: Comparison | None
    breaches: list[Breach]
    exit: GateExit
    baseline_written: Path | None = None

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
            counts = [
                (len(comparison.known_losses), "known context losses"),
                (len(comparison.new), "probes not in the baseline (not gated)"),
                (len(comparison.removed), "baseline probes gone from the scenarios"),
            ]
            shown = [f"{k} {what}" for k, what in counts if k]
            if shown:
                lines.append("  " + "; ".join(shown))
        for breach in self.breaches:
            lines.append(f"  BUDGET    {breach}")
        if self.baseline_written is not None:
            lines.append(f"baseline written: {self.baseline_written}")
        if self.exit is not GateExit.OK:
            lines.append(f"gate exit code {int(self.exit)}: {_EXIT_MEANING[self.exit]}")
        return lines


_EXIT_MEANING = {
    GateExit.REGRESSION: "a probe regressed",
    GateExit.BUDGET: "a --ctx-fail-if budget rule broke",
    GateExit.ERRORS: "some items could not be evaluated (errors); nothing regressed",
}


@dataclass
class Gate:
    path: Path
    update: bool
    rules: tuple[Rule, ...] = ()
    shard: tuple[int, int] | None = None
    baseline: Baseline | None = None
    _entries: dict[Key, BaselineEntry] = field(default_factory=dict)

    def load(self) -> None:
        """Read the baseline; a missing one is fine only when writing it.
        Raises BaselineError."""
        if self.update and not self.path.exists():
            self.baseline = None
            return
        self.baseline = read_baseline(self.path)
        self._entries = self.baseline.by_key()

    def decide(self, record: ResultRecord) -> tuple[str, str]:
        """How the item of ``record`` ends: see compare.item_decision. While
        the baseline is being written, the run itself is the baseline."""
        if self.update:
            return item_decision(record, BaselineEntry.from_record(record))
        key = (record.scenario_file, record.scenario, record.strategy, record.probe)
        return item_decision(record, self._entries.get(key))

    def finish(
        self,
        records: list[ResultRecord],
        *,
        ran: set[tuple[str, str]],
        filtered: bool,
        model: str,
        plugin_version: str,
    ) -> GateResult:
        """``ran``: the (scenario file, strategy) pairs this run selected;
        ``filtered``: -k, -m or node ids narrowed the run, so a baseline probe
        that did not run may just be deselected, not removed."""

        def in_scope(key: Key) -> bool:
            return not filtered and (key[0], key[2]) in ran and in_shard(self.shard, key[0], key[1])

        errors = sum(r.classification == "error" for r in records)
        if self.update:
            kept = [
                e for e in (self.baseline.entries if self.baseline else []) if not in_scope(e.key)
            ]
            fresh = baseline_from_records(
                records,
                model=model,
                plugin_version=plugin_version,
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
        comparison = compare(records, self.baseline, in_scope)
        breaches = check_rules(list(self.rules), records, self.baseline)
        code = gate_exit(
            regressions=len(comparison.regressions), breaches=len(breaches), errors=errors
        )
        return GateResult(comparison, breaches, code)


__all__ = ["BaselineError", "Gate", "GateResult"]
