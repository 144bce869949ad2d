"""Drafts -> scenario YAML files: one file per scenario, ``<id>.yaml``.

The output is meant to be committed and reviewed, so it is block style,
keys in schema order, multi-line and long text as literal blocks, and the
same input always gives the same bytes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..schema import Scenario
from ._common import Draft, TranscriptError

LONG = 80  # characters; longer strings read better as a literal block than wrapped quotes
# Characters YAML would turn into plain newlines inside a block scalar.
_NO_BLOCK = re.compile("[\r\x85\u2028\u2029]")


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent list items under their key, like the hand-written scenarios.
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        return True  # no &anchors: every file reads on its own


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    block = ("\n" in value or len(value) > LONG) and not _NO_BLOCK.search(value)
    # PyYAML falls back to quoting by itself when a block cannot hold the text
    # (tabs, trailing spaces), so the round trip stays exact.
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


_Dumper.add_representer(str, _represent_str)


def slugify(text: str, fallback: str = "scenario") -> str:
    """A lower-case id that is a valid scenario id and a safe file name on
    every platform (lower case, so no two differ only by case)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9_.]+", "-", ascii_text.lower())
    slug = re.sub(r"[-_.]*-[-_.]*", "-", slug).strip("-_.")
    return slug[:80].rstrip("-_.") or fallback


def render_scenarios(drafts: Iterable[Draft], source: str) -> dict[str, str]:
    """File name -> YAML text, in input order; ids made unique by a suffix."""
    files: dict[str, str] = {}
    taken: set[str] = set()
    for draft in drafts:
        base = slugify(str(draft.data.get("id", "")))
        scenario_id, n = base, 1
        while scenario_id in taken:
            n += 1
            scenario_id = f"{base}-{n}"
        taken.add(scenario_id)
        data = {**draft.data, "id": scenario_id}
        try:
            scenario = Scenario.model_validate(data)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise TranscriptError(
                source, draft.where, f"cannot make a valid scenario ({loc}: {first['msg']})"
            ) from None
        files[f"{scenario_id}.yaml"] = dump_scenario(scenario)
    return files


def dump_scenario(scenario: Scenario) -> str:
    # exclude_unset keeps exactly what the importer set, in the schema's field
    # order -- including an explicit ``assistant: null`` next to tool calls.
    data = scenario.model_dump(mode="json", exclude_unset=True)
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return text


def write_scenarios(drafts: Iterable[Draft], out_dir: str | Path, source: str) -> list[Path]:
    """Render everything first, so a bad conversation leaves no half-written
    output; then write (overwriting files of an earlier import)."""
    files = render_scenarios(drafts, source)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
