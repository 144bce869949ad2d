"""``ctxeval runs``, ``ctxeval compare`` and ``ctxeval view``: the run
history pytest keeps under reports/runs/ (see history/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .command import AddCommand, Handler

REPORTS = Path("reports")
RUN_HELP = "latest, previous, a run id from `ctxeval runs`, a run's folder or a results file"


def add(command: AddCommand) -> None:
    runs = command("runs", "List the runs kept under reports/runs/, oldest first")
    _reports_option(runs)
    compare = command(
        "compare", "Set two runs side by side in one HTML page: what got worse, what got better"
    )
    compare.add_argument("run_a", metavar="RUN_A", help=f"The earlier run: {RUN_HELP}")
    compare.add_argument("run_b", metavar="RUN_B", help=f"The later run: {RUN_HELP}")
    compare.add_argument(
        "-o",
        "--output",
        type=Path,
        help="Where to write the page (default: reports/compare-A-B.html)",
    )
    _reports_option(compare)
    view = command("view", "Open the latest report (or a run's) in the browser")
    view.add_argument("run", nargs="?", metavar="RUN", help=f"A kept run: {RUN_HELP}")
    view.add_argument(
        "--serve",
        action="store_true",
        help="Serve the report's folder on 127.0.0.1 and print the URL (the default "
        "when no browser can be opened); Ctrl-C stops it",
    )
    view.add_argument(
        "--no-open", action="store_true", help="With --serve: do not open a browser at the URL"
    )
    _reports_option(view)


def _reports_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reports",
        type=Path,
        default=REPORTS,
        metavar="DIR",
        help="The folder pytest writes its results in (default: reports; the history is DIR/runs)",
    )


def _runs(args: argparse.Namespace) -> int:
    from ..history.refs import runs_of

    entries = runs_of(args.reports)
    if not entries:
        print(f"no runs kept under {args.reports / 'runs'} (each pytest run with results adds one)")
        return 0
    header = ("run id", "date", "commit", "model", "pass", "fail", "error", "items", "strategies")
    rows = [header]
    for e in entries:
        c = e.counts
        items = str(c.get("items", 0)) + (f" ({e.merged} earlier)" if e.merged else "")
        rows.append(
            (
                e.run_id,
                e.started_at.replace("T", " ").removesuffix("+00:00"),
                e.git_commit or "—",
                e.model or "—",
                str(c.get("passed", 0)),
                str(c.get("failed", 0)),
                str(c.get("error", 0)),
                items,
                ",".join(e.strategies) or "—",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ..history.compare import Side, compare_runs
    from ..history.compare_page import write_compare
    from ..history.refs import RunNotFound, resolve
    from ..results.store import load_results

    try:
        a, b = resolve(args.run_a, args.reports), resolve(args.run_b, args.reports)
        sides = [Side(run.label, load_results(run.results)) for run in (a, b)]
    except (RunNotFound, OSError, ValueError) as exc:
        print(f"ctxeval compare: {exc}", file=sys.stderr)
        return 1
    result = compare_runs(*sides)
    output = args.output or args.reports / f"compare-{_safe(a.label)}-{_safe(b.label)}.html"
    try:
        write_compare(output, result)
    except OSError as exc:
        print(f"ctxeval compare: cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    worse, better = len(result.section("worse")), len(result.section("better"))
    print(f"compare: {output} ({worse} got worse, {better} got better, {len(result.rows)} items)")
    return 0


def _safe(label: str) -> str:
    """A run label as part of a file name."""
    name = Path(label).stem if ("/" in label or label.endswith(".jsonl")) else label
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:60]


def _view(args: argparse.Namespace) -> int:
    from ..history.serve import open_report, serve

    report = args.reports / "ctxeval.html"
    if args.run is not None:
        from ..history.refs import RunNotFound, resolve

        try:
            named = resolve(args.run, args.reports)
        except RunNotFound as exc:
            print(f"ctxeval view: {exc}", file=sys.stderr)
            return 1
        if named.report is None:
            print(f"ctxeval view: run {named.label} kept no report", file=sys.stderr)
            return 1
        report = named.report
    if not report.is_file():
        print(
            f"ctxeval view: {report} does not exist; run pytest first (or pass --reports DIR)",
            file=sys.stderr,
        )
        return 1
    if not args.serve and open_report(report):
        print(f"opened {report}")
        return 0
    return serve(report, open_browser=args.serve and not args.no_open)


HANDLERS: dict[str, Handler] = {"runs": _runs, "compare": _compare, "view": _view}
