"""The baseline file: what each probe scored under each strategy on a known-good run.

It is committed next to the scenarios and reviewed like code, so it is written
for people: JSON with the run's metadata first, then one entry per line, sorted
by (scenario file, scenario, strategy, probe), so a change shows up in a diff as
exactly the lines of the probes that moved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..results.record import ResultRecord, own_fact_survival
from ..safe_files import replace_text

BASELINE_VERSION = 1

Key = tuple[str, str, str, str]


class BaselineError(Exception):
    """A baseline file that cannot be read; the message names the file."""


class BaselineEntry(BaseModel):
    """One probe under one strategy, as far as the gate needs to remember it."""

    # NaN and infinity are refused: a hand-edited baseline would otherwise
    # make every comparison with it false.
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    scenario_file: str
    scenario: str
    strategy: str
    probe: str
    # The probe's question, hashed: a renamed probe is matched by it
    # (absent from baselines written before it was recorded).
    probe_digest: str = ""
    classification: str
    verdict: str
    repeat: int = 1
    pass_rate: float | None = None
    pass_rate_interval: tuple[float, float] | None = None
    ground_truth_pass_rate: float | None = None
    # The states of the facts the probe is about, not of every fact of its
    # session (see own_fact_survival): a LoCoMo-size baseline with every fact
    # in every entry was 95 MB.
    fact_survival: dict[str, str] = Field(default_factory=dict)
    prompt_tokens: int = 0
    cumulative_input_tokens: int = 0
    cost_usd: float = 0.0
    # The probe's session, priced once per session (absent from older baselines).
    session_cost_usd: float = 0.0

    @property
    def key(self) -> Key:
        return (self.scenario_file, self.scenario, self.strategy, self.probe)

    @classmethod
    def from_record(cls, record: ResultRecord) -> BaselineEntry:
        fields = record.model_dump(include=set(cls.model_fields) - {"fact_survival"})
        return cls.model_validate({**fields, "fact_survival": own_fact_survival(record)})


class Baseline(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int = BASELINE_VERSION
    model: str = ""
    plugin_version: str = ""
    created: str = ""
    # The tested project's commit the baseline was written at ("" if unknown).
    git_commit: str = ""
    entries: list[BaselineEntry] = Field(default_factory=list)

    def by_key(self) -> dict[Key, BaselineEntry]:
        return {entry.key: entry for entry in self.entries}


def record_key(record: ResultRecord) -> Key:
    return (record.scenario_file, record.scenario, record.strategy, record.probe)


def baseline_from_records(records: Iterable[ResultRecord], **metadata: Any) -> Baseline:
    entries = sorted((BaselineEntry.from_record(r) for r in records), key=lambda e: e.key)
    return Baseline(entries=entries, **metadata)


def write_baseline(path: Path, baseline: Baseline) -> None:
    header = baseline.model_dump(mode="json", exclude={"entries"})
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in header.items()]
    entries = [
        "    " + json.dumps(e.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)
        for e in sorted(baseline.entries, key=lambda e: e.key)
    ]
    lines.append('  "entries": [')
    if entries:
        lines.append(",\n".join(entries))
    lines.append("  ]")
    lines.append("}")
    # A fresh temporary file renamed over the baseline: never written through a link.
    replace_text(path, "\n".join(lines) + "\n")


def read_baseline(path: Path) -> Baseline:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: no such baseline; write one with --ctx-update-baseline"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            f"{path}:{exc.lineno}:{exc.colno}: not a baseline (invalid JSON: {exc.msg})"
        ) from None
    if not isinstance(data, dict):
        raise BaselineError(f"{path}: not a baseline: expected a JSON object with entries")
    version = data.get("version", BASELINE_VERSION)
    if version != BASELINE_VERSION or isinstance(version, bool):
        raise BaselineError(
            f"{path}: baseline version {version!r} is not supported "
            f"(expected {BASELINE_VERSION}); rewrite it with --ctx-update-baseline"
        )
    try:
        baseline = Baseline.model_validate(data)
    except ValidationError as exc:
        raise BaselineError(f"{path}: not a baseline: {_where(exc, data)}") from None
    seen: set[Key] = set()
    for entry in baseline.entries:
        if entry.key in seen:
            raise BaselineError(f"{path}: entry {'::'.join(entry.key)} appears twice")
        seen.add(entry.key)
    return baseline


def _where(exc: ValidationError, data: dict[str, Any]) -> str:
    """The first problem, naming the entry by its probe when it is in one:
    "entry 3 (scenarios/a.yaml::s::p[full]): cost_usd: Input should be a finite number"."""
    first = exc.errors()[0]
    loc = list(first["loc"])
    message = first["msg"]
    if len(loc) >= 2 and loc[0] == "entries" and isinstance(loc[1], int):
        entries = data.get("entries")
        entry = entries[loc[1]] if isinstance(entries, list) else None
        named = ""
        if isinstance(entry, dict):
            fields = [str(entry.get(k, "?")) for k in ("scenario_file", "scenario", "probe")]
            named = f" ({'::'.join(fields)}[{entry.get('strategy', '?')}])"
        field = ".".join(str(p) for p in loc[2:]) or "(the entry)"
        return f"entry {loc[1] + 1}{named}: {field}: {message}"
    return f"{'.'.join(str(p) for p in loc) or '(top)'}: {message}"


def merge_baselines(baselines: Iterable[Baseline]) -> Baseline:
    """Join the baselines written by the shards of one CI matrix. A probe in two
    shards with different entries is an error: the shards ran different code."""
    merged: dict[Key, BaselineEntry] = {}
    first: Baseline | None = None
    for baseline in baselines:
        first = first or baseline
        for entry in baseline.entries:
            known = merged.get(entry.key)
            if known is not None and known != entry:
                raise BaselineError(
                    f"{'::'.join(entry.key)} differs between the baselines being merged"
                )
            merged[entry.key] = entry
    metadata = first.model_dump(exclude={"entries"}) if first else {}
    return Baseline(entries=sorted(merged.values(), key=lambda e: e.key), **metadata)
