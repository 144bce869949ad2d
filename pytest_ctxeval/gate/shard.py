"""``--ctx-shard=i/n``: a stable share of the scenarios for one job of a CI matrix.

A whole scenario goes to one shard, with all its probes and strategies, so its
session is simulated once; the choice hashes the scenario's file and id, so it
does not move when other scenarios are added or removed.
"""

from __future__ import annotations

import hashlib
import re

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; raises ValueError with what was expected."""
    match = _SHARD.match(text)
    if match:
        index, count = int(match[1]), int(match[2])
        if 1 <= index <= count:
            return index, count
    raise ValueError(
        f"invalid value {text!r}; expected I/N with 1 <= I <= N, e.g. 1/4 for the first of 4 shards"
    )


def shard_of(scenario_file: str, scenario: str, count: int) -> int:
    """The 1-based shard a scenario belongs to."""
    digest = hashlib.sha256(f"{scenario_file}::{scenario}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(shard: tuple[int, int] | None, scenario_file: str, scenario: str) -> bool:
    """Whether ``--ctx-shard`` (None: no sharding) keeps this scenario."""
    if shard is None:
        return True
    index, count = shard
    return shard_of(scenario_file, scenario, count) == index


def parse_nodeid(nodeid: str) -> tuple[str, str, str, str]:
    """``path::scenario::probe[strategy]`` -> (path, scenario, strategy, probe)."""
    path, _, rest = nodeid.partition("::")
    scenario, _, item = rest.partition("::")
    probe, _, strategy = item.partition("[")
    return (path, scenario, strategy.removesuffix("]"), probe)
