"""The ``ctxeval`` console script."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ctxeval", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="Check scenario files without running them")
    validate.add_argument("paths", nargs="+", type=Path)
    sub.add_parser("schema", help="Print the JSON Schema of the scenario format")
    sub.add_parser("strategies", help="List the available strategies")
    report = sub.add_parser("report", help="Render the HTML report from a results file")
    report.add_argument("results", type=Path)
    report.add_argument("-o", "--output", type=Path, default=Path("reports/ctxeval.html"))

    args = parser.parse_args(argv)
    handler = {
        "validate": _validate,
        "schema": _schema,
        "strategies": _strategies,
        "report": _report,
    }[args.command]
    return handler(args)


def _validate(args: argparse.Namespace) -> int:
    from .scenario.errors import ScenarioError
    from .scenario.loader import load_scenarios

    files: list[Path] = []
    for path in args.paths:
        files.extend(sorted(path.rglob("*.y*ml")) if path.is_dir() else [path])
    bad = 0
    for file in files:
        try:
            scenarios = load_scenarios(file)
        except ScenarioError as exc:
            bad += 1
            print(exc, file=sys.stderr)
        else:
            print(f"{file}: ok ({len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''})")
    return 1 if bad else 0


def _schema(args: argparse.Namespace) -> int:
    from .scenario.schema import Scenario

    schema = Scenario.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2, sort_keys=True))
    return 0


def _strategies(args: argparse.Namespace) -> int:
    from .strategies.registry import available

    for name, factory in sorted(available().items()):
        description = getattr(factory, "description", "") or ""
        try:
            params = factory().params()  # type: ignore[attr-defined]
        except Exception:
            params = {}
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        print(f"{name:<12} {description}" + (f"  [{shown}]" if shown else ""))
    return 0


def _report(args: argparse.Namespace) -> int:
    from .report.html import write_report
    from .results.store import load_results

    try:
        records = load_results(args.results)
    except (OSError, ValueError) as exc:
        print(f"ctxeval report: {exc}", file=sys.stderr)
        return 1
    write_report(args.output, records)
    print(f"report: {args.output} ({len(records)} records)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
