"""The ``ctxeval`` console script."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ctxeval", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="Check scenario files without running them")
    validate.add_argument("paths", nargs="+", type=Path)
    validate.add_argument(
        "--root",
        type=Path,
        default=None,
        help="Directory that !include may not leave (default: a directory given, "
        "else the current directory for files inside it)",
    )
    schema = sub.add_parser("schema", help="Print the JSON Schema of the scenario format")
    schema.add_argument(
        "--markdown", action="store_true", help="Print a field reference in Markdown instead"
    )
    sub.add_parser("strategies", help="List the available strategies")
    show = sub.add_parser("show", help="Print the exact window a strategy builds")
    show.add_argument("scenario", type=Path, help="A scenario file")
    show.add_argument("--id", help="Which scenario of the file (default: the first)")
    show.add_argument("--strategy", default="full", help="A strategy or preset name")
    show.add_argument(
        "--turn", type=int, help="The model call at this message (1-based); default: the probe"
    )
    show.add_argument("--probe", help="Which probe (default: the first)")
    show.add_argument("--model", default="ctxeval/oracle", help="For strategies that call one")
    show.add_argument("--json", action="store_true", help="Print messages and tools as JSON")
    report = sub.add_parser("report", help="Render the HTML report from a results file")
    report.add_argument("results", type=Path)
    report.add_argument("-o", "--output", type=Path, default=Path("reports/ctxeval.html"))
    importer = sub.add_parser(
        "import",
        help="Turn real transcripts into scenario files (see docs/importing.md)",
    )
    # No argparse choices: an unknown format gets our own message and exit code 1.
    importer.add_argument(
        "format", metavar="FORMAT", help="One of locomo, multichallenge, openai-jsonl, tau-bench"
    )
    importer.add_argument("file", metavar="FILE", type=Path, help="The transcript file")
    importer.add_argument(
        "-o", "--output", metavar="DIR", type=Path, required=True, help="Directory to write to"
    )

    args = parser.parse_args(argv)
    handler = {
        "validate": _validate,
        "schema": _schema,
        "strategies": _strategies,
        "show": _show,
        "report": _report,
        "import": _import,
    }[args.command]
    return handler(args)


def _validate(args: argparse.Namespace) -> int:
    from .scenario.errors import ScenarioError, ScenarioWarning
    from .scenario.loader import load_scenarios

    files: list[tuple[Path, Path]] = []  # (file, the root its includes must stay in)
    for path in args.paths:
        if path.is_dir():
            # As the plugin collects: folders starting with "_" hold fragments.
            found = (
                p
                for p in path.rglob("*.y*ml")
                if not any(part.startswith("_") for part in p.relative_to(path).parts)
            )
            files.extend((file, args.root or path) for file in sorted(found))
        else:
            files.append((path, _include_root(path, args.root)))
    bad = 0
    for file, root in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ScenarioWarning)
            try:
                scenarios = load_scenarios(file, root=root)
            except ScenarioError as exc:
                bad += 1
                print(exc, file=sys.stderr)
                scenarios = None
        notes = _scenario_warnings(caught)
        for note in notes:
            print(note, file=sys.stderr)
        if scenarios is not None:
            counted = f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}"
            if notes:
                counted += f", {len(notes)} warning{'s' if len(notes) != 1 else ''}"
            print(f"{file}: ok ({counted})")
    return 1 if bad else 0


def _scenario_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """ScenarioWarnings as "file:line:col: warning: ..."; any other warning
    is shown as Python would have shown it."""
    from .scenario.errors import ScenarioWarning

    notes = []
    for record in caught:
        message = record.message
        if not isinstance(message, ScenarioWarning):
            warnings.showwarning(message, record.category, record.filename, record.lineno)
        elif message.problem is not None:
            p = message.problem
            notes.append(f"{p.path}:{p.line}:{p.column}: warning: {p.message}")
        else:
            notes.append(f"warning: {message}")
    return notes


def _include_root(file: Path, root: Path | None) -> Path:
    if root is not None:
        return root
    cwd = Path.cwd()
    return cwd if file.resolve().is_relative_to(cwd) else file.parent


def _allow_templates(node: object) -> None:
    """Numbers and booleans may also be a "{{ template }}" string in a
    scenario with vars or a matrix: say so, or editors flag every grid."""
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if isinstance(value, dict) and value.get("type") in ("integer", "number", "boolean"):
                typed = dict(value)
                meta = {k: typed.pop(k) for k in ("title", "description", "default") if k in typed}
                node[key] = {
                    **meta,
                    "anyOf": [typed, {"type": "string", "pattern": r"\{\{.*\}\}"}],
                }
            else:
                _allow_templates(value)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, dict) and value.get("type") in ("integer", "number", "boolean"):
                node[i] = {"anyOf": [value, {"type": "string", "pattern": r"\{\{.*\}\}"}]}
            else:
                _allow_templates(value)


def schema_reference(schema: dict[str, Any]) -> str:
    """The scenario format as Markdown tables, one per object, from the schema."""
    sections = [("Scenario", schema)] + sorted(schema.get("$defs", {}).items())
    out = []
    for name, model in sections:
        properties = model.get("properties")
        if not properties:
            continue
        required = set(model.get("required", []))
        out += [f"### {name}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for key, spec in properties.items():
            if key in required:
                default = "required"
            else:
                default = json.dumps(spec["default"]) if "default" in spec else "—"
            meaning = " ".join(str(spec.get("description", "")).split())
            out.append(f"| `{key}` | {_type_name(spec)} | {default} | {meaning} |")
        out.append("")
    return "\n".join(out).rstrip()


def _type_name(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"  # JSON Schema's `true`: anything goes
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "enum" in spec:
        return " \\| ".join(json.dumps(v) for v in spec["enum"])
    if "const" in spec:
        return json.dumps(spec["const"])
    for union in ("anyOf", "oneOf"):
        if union in spec:
            names = [_type_name(s) for s in spec[union] if s.get("type") != "null"]
            return " or ".join(dict.fromkeys(names))
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type_name(spec.get('items', {}))}"
    if kind == "object" and "additionalProperties" in spec:
        return f"mapping of {_type_name(spec['additionalProperties'])}"
    return str(kind)


def _schema(args: argparse.Namespace) -> int:
    from .scenario.schema import Scenario

    schema = Scenario.model_json_schema()
    if args.markdown:
        print(schema_reference(schema))
        return 0
    _allow_templates(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2, sort_keys=True))
    return 0


def _strategies(args: argparse.Namespace) -> int:
    from .strategies.presets import PresetError, default_preset_dirs, load_presets
    from .strategies.registry import available

    def shown(params: dict[str, object]) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in params.items())

    known = available(preset_dirs=[])
    for name, factory in sorted(known.items()):
        description = getattr(factory, "description", "") or ""
        try:
            params = factory().params()  # type: ignore[attr-defined]
        except Exception:
            params = {}
        print(f"{name:<18} {description}" + (f"  [{shown(params)}]" if params else ""))
    dirs = default_preset_dirs()
    try:
        presets = load_presets(dirs, known)
    except PresetError as exc:
        print(f"ctxeval strategies: {exc}", file=sys.stderr)
        return 1
    if presets:
        print(f"\npresets ({', '.join(str(d) for d in dirs)}):")
    for name, preset in sorted(presets.items()):
        kind = f"{preset.preset.kind}({shown(preset.preset.params)})"
        print(f"{name:<18} {kind}  {preset.description}  [{preset.path.name}]")
    return 0


def _show(args: argparse.Namespace) -> int:
    from .evaluate.inspect import render_window, window_at, window_json
    from .scenario.errors import ScenarioError
    from .scenario.loader import load_conversations
    from .strategies.registry import UnknownStrategyError, resolve

    try:
        conversations = load_conversations(args.scenario, root=_include_root(args.scenario, None))
        (spec,) = resolve(args.strategy, preset_dirs=[Path.cwd() / "strategies"])
        conversation = next(c for c in conversations if args.id in (None, c.id))
        window = window_at(conversation, spec, turn=args.turn, probe=args.probe, model=args.model)
    except StopIteration:
        ids = ", ".join(c.id for c in conversations)
        print(
            f"ctxeval show: no scenario {args.id!r} in {args.scenario}; ids: {ids}", file=sys.stderr
        )
        return 1
    except (ScenarioError, UnknownStrategyError, ValueError) as exc:
        print(f"ctxeval show: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(window_json(window), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(render_window(window, args.model))
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


def _import(args: argparse.Namespace) -> int:
    from .scenario.importers import IMPORTERS, TranscriptError, import_file, write_scenarios

    if args.format not in IMPORTERS:
        known = ", ".join(sorted(IMPORTERS))
        print(
            f"ctxeval import: unknown format {args.format!r}; known formats: {known}",
            file=sys.stderr,
        )
        return 1
    source = str(args.file)
    try:
        written = write_scenarios(import_file(args.format, args.file), args.output, source)
    except TranscriptError as exc:
        print(f"ctxeval import: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ctxeval import: cannot write to {args.output}: {exc}", file=sys.stderr)
        return 1
    plural = "s" if len(written) != 1 else ""
    print(f"{source}: {len(written)} scenario{plural} written to {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
