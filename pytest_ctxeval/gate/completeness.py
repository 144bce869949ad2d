"""Whether results are whole: the shards of a CI matrix all there, once each,
from one run configuration (``ctxeval merge``), and which baseline probes a
results file should have had (``ctxeval gate``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..results.record import ResultRecord
from .baseline import Key
from .compare import Scope


class IncompleteShards(ValueError):
    """Shards that do not make one whole run; the message says which and why."""


def _config(records: list[ResultRecord]) -> dict[str, set[str]]:
    return {
        "model": {r.model for r in records},
        "plugin version": {r.plugin_version for r in records},
        "strategies": {",".join(r.run_strategies) for r in records},
    }


def check_shards(files: list[tuple[Path, list[ResultRecord]]]) -> int | None:
    """Raise IncompleteShards unless the files are shards 1..n of one run,
    each once (an empty file is a shard that drew no scenario).  Returns n,
    or None when no record was sharded (a plain join)."""
    sharded = [(path, records) for path, records in files if any(r.shard for r in records)]
    if not sharded:
        return None
    plain = [path for path, records in files if records and not any(r.shard for r in records)]
    if plain:
        raise IncompleteShards(f"{plain[0]} was not run with --ctx-shard, the others were")
    seen: dict[int, Path] = {}
    count: int | None = None
    reference: tuple[Path, dict[str, set[str]]] | None = None
    for path, records in sharded:
        shards = {r.shard or "none" for r in records}
        if len(shards) > 1:
            raise IncompleteShards(f"{path} holds records of shards {', '.join(sorted(shards))}")
        index, n = (int(part) for part in str(shards.pop()).split("/"))
        if count is not None and n != count:
            raise IncompleteShards(f"{path} is shard {index}/{n}, the others are of {count}")
        count = n
        if index in seen:
            raise IncompleteShards(f"shard {index}/{n} is in both {seen[index]} and {path}")
        seen[index] = path
        config = _config(records)
        for what, values in config.items():
            if len(values) > 1:
                raise IncompleteShards(f"{path}: records of more than one {what}")
        if reference is None:
            reference = (path, config)
            continue
        for what, values in config.items():
            if values != reference[1][what]:
                ours, theirs = ", ".join(sorted(values)), ", ".join(sorted(reference[1][what]))
                raise IncompleteShards(
                    f"{path} and {reference[0]} come from different runs: "
                    f"{what} {ours!r} against {theirs!r}"
                )
    assert count is not None
    _same_scenarios(sharded)
    missing = sorted(set(range(1, count + 1)) - set(seen))
    empty = sum(1 for _, records in files if not records)
    if len(missing) > empty:
        shown = ", ".join(f"{i}/{count}" for i in missing)
        raise IncompleteShards(
            f"shard{'s' if len(missing) > 1 else ''} {shown} missing: "
            f"{len(seen)} of {count} shards have results"
        )
    return count


def _same_scenarios(sharded: list[tuple[Path, list[ResultRecord]]]) -> None:
    """A scenario file split across shards must be the same file in each."""
    digests: dict[str, tuple[str, Path]] = {}
    for path, records in sharded:
        for record in records:
            if not record.scenario_digest:
                continue
            known = digests.setdefault(record.scenario_file, (record.scenario_digest, path))
            if known[0] != record.scenario_digest:
                raise IncompleteShards(
                    f"{record.scenario_file} differs between {known[1]} and {path}: "
                    "were the shards run on the same commit?"
                )


def shard_count(records: list[ResultRecord]) -> int | None:
    counts = {int(r.shard.split("/")[1]) for r in records if r.shard}
    return counts.pop() if len(counts) == 1 else None


def scenario_scope(records: list[ResultRecord], root: Path) -> Callable[[Key], Scope]:
    """Where a baseline probe missing from ``records`` stands, by the scenario
    files under ``root``: another strategy or mode than the run's is out of
    scope; one the files still have was expected; else it is gone."""
    strategies = {s for r in records for s in r.run_strategies} or {r.strategy for r in records}
    swept = any("@" in r.probe for r in records)
    files: dict[str, dict[str, set[str]] | None] = {}

    def probes_of(scenario_file: str) -> dict[str, set[str]] | None:
        if scenario_file not in files:
            files[scenario_file] = _read(root / scenario_file, root)
        return files[scenario_file]

    def scope(key: Key) -> Scope:
        scenario_file, scenario, strategy, probe = key
        if strategy not in strategies or ("@" in probe and not swept):
            return "out"
        found = probes_of(scenario_file)
        if found is None:
            return "gone"
        if "*" in found:  # a file that does not load: the run could not have it either
            return "expected"
        return "expected" if probe.partition("@")[0] in found.get(scenario, set()) else "gone"

    return scope


def _read(path: Path, root: Path) -> dict[str, set[str]] | None:
    """Scenario id -> probe ids of a file; None when it is gone."""
    if not path.is_file():
        return None
    from ..scenario.errors import ScenarioError
    from ..scenario.loader import load_conversations

    try:
        conversations = load_conversations(path, root=root)
    except ScenarioError:
        return {"*": set()}
    return {c.id: {p.id for p in c.probes} for c in conversations}
