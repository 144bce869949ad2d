"""Structured output for the mock models: fill a JSON schema extractively.

When a request carries ``response_format={"type": "json_schema", ...}``, the
oracle answers with an object of that schema, every value taken from the
visible (non-system) messages: a string field gets the sentence whose words
best match the field's name and description, a list field every sentence
that matches it better than any other field, and a list about files or paths
the path-like tokens found.  Deterministic and honest, like the oracle: what
is not in the messages cannot appear in the answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..messages import content_text
from .text import sentences, terms

MAX_ITEMS = 12
MAX_ITEM_CHARS = 300
# "src/app.py", "docs/", "pyproject.toml": a slash, or a common file extension
# ("http.get" or "e.g." are not files).
_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|json|yaml|yml|toml|md|rst|txt|cfg|ini|sh|go|rs|java|kt|rb|php|c|h|"
    "cc|cpp|hpp|cs|swift|sql|html|css|scss|xml|csv|lock|env|proto|tf|ipynb"
)
_PATH = re.compile(
    rf"(?<![\w/.-])(?:\.{{0,2}}/)?(?:[\w.-]+/)+[\w.-]*|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})\b"
)
# Transcript role labels ("[user] ") and list bullets are layout, not content.
_LEAD = re.compile(r"^(?:\[[a-z ]+\]\s*|[-*•]\s+)+")
_PATH_WORDS = frozenset({"file", "path", "files", "paths"})


def requested_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON schema a ``response_format`` asks for; None for plain text or JSON mode."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


def fill_json(messages: list[dict[str, Any]], schema: dict[str, Any]) -> str:
    """The answer's text: the filled object, serialised with sorted keys."""
    return json.dumps(fill(messages, schema), sort_keys=True)


def fill(messages: list[dict[str, Any]], schema: dict[str, Any]) -> Any:
    found = (
        _LEAD.sub("", s)
        for m in messages
        if m.get("role") != "system"
        for s in sentences(content_text(m))
    )
    lines = [line for line in found if line and not line.startswith("#")]  # headings: layout
    return _Filler(lines, schema.get("$defs") or {}).value(schema, "")


class _Filler:
    def __init__(self, lines: list[str], defs: dict[str, Any]) -> None:
        self.lines = lines
        self.line_terms = [set(terms(line)) for line in lines]
        self.defs = defs
        self.owner: dict[int, str] = {}  # line index -> the list field it belongs to

    def value(self, schema: dict[str, Any], name: str) -> Any:
        schema = self._resolve(schema)
        kind = schema.get("type")
        if isinstance(kind, list):  # ["string", "null"]: the first real type
            kind = next((k for k in kind if k != "null"), "null")
        if "enum" in schema:
            return schema["enum"][0]
        if kind == "object" or "properties" in schema:
            return self._object(schema)
        if kind == "array":
            return self._array(schema, name)
        if kind == "string":
            best = self._matches(schema, name)
            return best[0] if best else ""
        return {"integer": 0, "number": 0, "boolean": False}.get(str(kind))

    def _object(self, schema: dict[str, Any]) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties") or {}
        # A sentence belongs to the list field it matches best, not to all of them;
        # a nested object has its own fields to share out, then ours apply again.
        outer, self.owner = self.owner, self._owners(properties)
        filled = {key: self.value(sub, key) for key, sub in properties.items()}
        self.owner = outer
        return filled

    def _array(self, schema: dict[str, Any], name: str) -> list[Any]:
        items = self._resolve(schema.get("items") or {})
        if items.get("type") not in ("string", None) or "properties" in items:
            return []
        if _PATH_WORDS & set(_words(name, schema)):
            found = [m.group(0).rstrip(".") for line in self.lines for m in _PATH.finditer(line)]
            return list(dict.fromkeys(found))[:MAX_ITEMS]
        owned = [
            self.lines[i][:MAX_ITEM_CHARS] for i, key in sorted(self.owner.items()) if key == name
        ]
        # The latest ones: a working memory cares about where things stand now.
        return list(dict.fromkeys(owned))[-MAX_ITEMS:]

    def _matches(self, schema: dict[str, Any], name: str) -> list[str]:
        """Lines ranked by overlap with the field's words; ties go to the earliest."""
        cues = set(terms(" ".join(_words(name, schema))))
        scored = [(len(cues & t), i) for i, t in enumerate(self.line_terms) if cues & t]
        ranked = sorted(scored, key=lambda item: (-item[0], item[1]))
        return [self.lines[i][:MAX_ITEM_CHARS] for _, i in ranked]

    def _owners(self, properties: dict[str, Any]) -> dict[int, str]:
        lists = {
            key: set(terms(" ".join(_words(key, self._resolve(sub)))))
            for key, sub in properties.items()
            if self._resolve(sub).get("type") == "array"
        }
        owners: dict[int, str] = {}
        for i, line_terms in enumerate(self.line_terms):
            # max() keeps the first of equal scores: ties go to the earlier field.
            scores = [(len(cues & line_terms), key) for key, cues in lists.items()]
            score, key = max(scores, key=lambda item: item[0], default=(0, ""))
            if score > 0:
                owners[i] = key
        return owners

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            resolved: dict[str, Any] = self.defs.get(ref.removeprefix("#/$defs/"), {})
            return resolved
        for union in ("anyOf", "oneOf"):
            options = [o for o in schema.get(union) or [] if o.get("type") != "null"]
            if options:
                return {**self._resolve(options[0]), "description": schema.get("description", "")}
        return schema


def _words(name: str, schema: dict[str, Any]) -> list[str]:
    text = f"{name.replace('_', ' ')} {schema.get('title', '')} {schema.get('description', '')}"
    return re.findall(r"[A-Za-z]+", text.lower())
