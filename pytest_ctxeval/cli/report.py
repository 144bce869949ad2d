"""``ctxeval report``: the HTML report from a results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..gate.baseline import BaselineError
from .command import AddCommand, Handler


def add(command: AddCommand) -> None:
    report = command("report", "Render the HTML report from a results file")
    report.add_argument("results", type=Path, help="A results file (JSON lines)")
    report.add_argument("-o", "--output", type=Path, default=Path("reports/ctxeval.html"))
    report.add_argument(
        "--baseline",
        type=Path,
        help="Gate the results against this baseline, as `ctxeval gate` does: the header "
        "says what it decided, and regressed items are marked apart from known losses",
    )
    report.add_argument("--fail-if", default="", metavar="RULES", help="Budget rules, as gate's")
    report.add_argument("--allow-removed", action="store_true", help="As gate's --allow-removed")
    report.add_argument(
        "--root", type=Path, default=Path("."), help="As gate's --root (default: .)"
    )
    report.add_argument(
        "--csv", type=Path, metavar="PATH", help="Also write the item table as CSV to PATH"
    )


def _report(args: argparse.Namespace) -> int:
    from ..report.html import write_report
    from ..results.store import load_results

    gated = None
    try:
        records = load_results(args.results)
        if args.baseline is not None:
            from ..gate.baseline import read_baseline
            from ..gate.cli import gate_result
            from ..gate.rules import parse_rules

            baseline = read_baseline(args.baseline)
            rules = parse_rules(args.fail_if)
            gated = gate_result(
                records, baseline, rules, args.root, allow_removed=args.allow_removed
            )
    except (OSError, ValueError, BaselineError) as exc:  # RuleError is a ValueError
        print(f"ctxeval report: {exc}", file=sys.stderr)
        return 1
    write_report(args.output, records, gate=gated)
    print(f"report: {args.output} ({len(records)} records)")
    if args.csv is not None:
        from ..report.items_csv import write_items_csv

        print(f"items: {write_items_csv(args.csv, records)} (CSV)")
    if gated is not None:
        print(gated.headline)
    return 0


HANDLERS: dict[str, Handler] = {"report": _report}
