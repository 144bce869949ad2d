"""``ctxeval schema``: the scenario format as JSON Schema (for editors) or as
Markdown tables (for the docs)."""

from __future__ import annotations

import argparse
import json
from typing import Any


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
        return str(spec["$ref"]).rsplit("/", 1)[-1]
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


def schema_command(args: argparse.Namespace) -> int:
    from .schema import Scenario

    schema = Scenario.model_json_schema()
    if args.markdown:
        print(schema_reference(schema))
        return 0
    _allow_templates(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    print(json.dumps(schema, indent=2, sort_keys=True))
    return 0
