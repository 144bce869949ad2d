"""``ctxeval merge`` and ``ctxeval gate``: the gate after a sharded CI matrix.

Each shard runs ``pytest --ctx-shard=i/n --ctx-fail-on=never``; one job then
merges the shards' results (or baselines) and applies the gate to the whole.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .baseline import (
    Baseline,
    BaselineError,
    Key,
    merge_baselines,
    read_baseline,
    write_baseline,
)
from .exitcodes import GateExit

if TYPE_CHECKING:
    from ..results.record import ResultRecord
    from .rules import Rule
    from .run import GateResult

AddCommand = Callable[[str, str], argparse.ArgumentParser]


def add_commands(command: AddCommand) -> None:
    merge = command("merge", "Join the results files (or baselines) of CI shards into one")
    merge.add_argument("inputs", nargs="+", type=Path, metavar="FILE", help="Files to join")
    merge.add_argument("-o", "--output", type=Path, required=True, help="Where to write")
    gate = command(
        "gate", "Compare a results file with a baseline; the exit code tells what happened"
    )
    gate.add_argument("results", type=Path, help="A results file (JSON lines)")
    gate.add_argument("--baseline", type=Path, required=True, help="The baseline file")
    gate.add_argument(
        "--fail-if", default="", metavar="RULES", help="Budget rules, as --ctx-fail-if"
    )
    gate.add_argument("--summary", type=Path, help="Append a Markdown summary to this file")
    gate.add_argument(
        "--allow-removed",
        action="store_true",
        help="Pass although baseline probes match nothing in the results, as --ctx-allow-removed",
    )
    gate.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="The project root the scenario paths are relative to (default: the current "
        "directory): a baseline probe its scenarios still have must be in the results",
    )


def _is_baseline(path: Path) -> bool:
    from ..results.reading import is_gzip

    if is_gzip(path):  # a kept run's results
        return False
    with path.open(encoding="utf-8") as fh:
        head = fh.read(4096).lstrip()
    return head.startswith("{\n") or head.startswith('{"version"') or '"entries"' in head[:200]


def merge(args: argparse.Namespace) -> int:
    from ..results.store import load_results, write_results
    from .completeness import IncompleteShards, check_shards

    try:
        kinds = {_is_baseline(path) for path in args.inputs}
    except OSError as exc:
        print(f"ctxeval merge: {exc}", file=sys.stderr)
        return 1
    if len(kinds) > 1:
        print("ctxeval merge: give either results files or baselines, not both", file=sys.stderr)
        return 1
    try:
        if kinds == {True}:
            merged = merge_baselines(read_baseline(p) for p in args.inputs)
            write_baseline(args.output, merged)
            print(f"baseline: {args.output} ({len(merged.entries)} entries)")
            return 0
        loaded = [(path, load_results(path)) for path in args.inputs]
        check_shards(loaded)
        seen: dict[Key, Path] = {}
        records = []
        for path, found in loaded:
            for record in found:
                key = (record.scenario_file, record.scenario, record.strategy, record.probe)
                if key in seen:
                    raise ValueError(
                        f"{'::'.join(key)} is in both {seen[key]} and {path}: "
                        "were the shards run with the same --ctx-shard?"
                    )
                seen[key] = path
                records.append(record)
    except IncompleteShards as exc:
        print(f"ctxeval merge: {exc}", file=sys.stderr)
        return int(GateExit.INCOMPLETE)
    except (OSError, ValueError, BaselineError) as exc:
        print(f"ctxeval merge: {exc}", file=sys.stderr)
        return 1
    write_results(args.output, records)
    print(f"results: {args.output} ({len(records)} records from {len(args.inputs)} files)")
    return 0


def gate(args: argparse.Namespace) -> int:
    from ..report.markdown import markdown_summary
    from ..results.store import load_results
    from .rules import RuleError, parse_rules

    try:
        records = load_results(args.results)
        baseline = read_baseline(args.baseline)
        rules = parse_rules(args.fail_if)
    except RuleError as exc:
        print(f"ctxeval gate: --fail-if: {exc}", file=sys.stderr)
        return int(GateExit.USAGE)
    except (OSError, ValueError, BaselineError) as exc:
        print(f"ctxeval gate: {exc}", file=sys.stderr)
        return int(GateExit.USAGE)
    result = gate_result(records, baseline, rules, args.root, allow_removed=args.allow_removed)
    for line in result.lines():
        print(line)
    if args.summary:
        with args.summary.open("a", encoding="utf-8") as fh:
            fh.write(
                markdown_summary(records, comparison=result.comparison, breaches=result.breaches)
            )
    return int(result.exit)


def gate_result(
    records: list[ResultRecord],
    baseline: Baseline,
    rules: list[Rule],
    root: Path,
    *,
    allow_removed: bool = False,
) -> GateResult:
    """The gate over a results file: ``ctxeval gate``, and the header of
    ``ctxeval report --baseline``."""
    from .compare import compare
    from .completeness import scenario_scope, shard_count
    from .exitcodes import gate_exit
    from .rules import check_rules
    from .run import GateResult

    # A baseline probe the results lack is out of the run's scope, still in
    # the scenarios (the results are incomplete), or gone from them.
    comparison = compare(records, baseline, scenario_scope(records, root))
    breaches = check_rules(rules, records, baseline)
    errors = sum(r.classification == "error" for r in records)
    code = gate_exit(
        regressions=len(comparison.regressions),
        breaches=len(breaches),
        errors=errors,
        missing=len(comparison.missing),
        unmatched=0 if allow_removed else len(comparison.removed),
    )
    return GateResult(
        comparison,
        breaches,
        code,
        shards=shard_count(records),
        allow_removed=allow_removed,
        baseline_commit=baseline.git_commit,
    )


__all__ = ["add_commands", "gate", "gate_result", "merge"]
