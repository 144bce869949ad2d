"""What identifies a run: the plugin's version, the tested project's git commit,
when the run started, the model and each strategy's kind and parameters.

The session collects it once per run (``collect_run_info``) and stamps every
record with it as the record arrives (``RunInfo.stamp``); the report shows it
in its header.  Light on purpose: the runner imports the parameter helpers on
every worker.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..results.record import ResultRecord
    from ..strategies.registry import StrategySpec

GIT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RunInfo:
    plugin_version: str
    git_commit: str | None
    started_at: str  # ISO 8601, UTC, to the second
    model: str = ""
    run_id: str = ""
    # Per strategy name: {"kind": ..., "params": {...}} as the spec gives them.
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stamp(self, record: ResultRecord) -> None:
        """Give ``record`` the run's version, commit and start time; the
        strategy's parameters too when the runner could not fill them."""
        record.plugin_version = self.plugin_version
        record.git_commit = self.git_commit
        record.started_at = self.started_at
        known = self.strategies.get(record.strategy)
        if not record.strategy_params and known:
            record.strategy_params = dict(known["params"])
        if self.strategies and not record.run_strategies:
            record.run_strategies = sorted(self.strategies)


def collect_run_info(
    rootdir: Path,
    *,
    model: str,
    run_id: str = "",
    started_at: datetime | None = None,
    strategies: Sequence[StrategySpec] = (),
) -> RunInfo:
    """The run's metadata; the commit is that of the git checkout holding
    ``rootdir`` (None when there is none, or git does not answer in time)."""
    started = started_at or datetime.now(timezone.utc)
    return RunInfo(
        plugin_version=plugin_version(),
        git_commit=git_commit(rootdir),
        started_at=started.astimezone(timezone.utc).isoformat(timespec="seconds"),
        model=model,
        run_id=run_id,
        strategies={
            spec.name: {"kind": strategy_kind(spec), "params": plain(spec.params)}
            for spec in strategies
        },
    )


def plugin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-ctxeval")
    except PackageNotFoundError:  # a source tree that was never installed
        from .. import __version__

        return __version__


def git_commit(rootdir: Path, timeout_s: float = GIT_TIMEOUT_S) -> str | None:
    """``git rev-parse --short HEAD`` in ``rootdir``; None when it is not in a
    checkout, git is missing, or it takes longer than ``timeout_s``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=rootdir,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def strategy_kind(spec: StrategySpec) -> str:
    """The strategy a spec builds: ``sliding`` for the preset ``sliding-8``,
    ``headtail`` for ``headtail[head:50+tail:50]``."""
    from ..strategies.registry import own_name

    factory = spec.factory
    entry_point = getattr(factory, "entry_point", None)
    if entry_point is not None:
        return str(entry_point.name)
    return own_name(factory) or spec.name.partition("[")[0]


def strategy_params(spec: StrategySpec, instance: object | None = None) -> dict[str, Any]:
    """The parameters a strategy runs with: its own ``params()`` (defaults
    included) over the ones the spec gives, as plain JSON values."""
    params: dict[str, Any] = dict(spec.params)
    own = getattr(instance, "params", None)
    if callable(own):
        try:
            reported = own()
        except Exception:  # a custom strategy's bug must not cost the item its record
            reported = None
        if isinstance(reported, Mapping):
            params.update(reported)
    return plain(params)


def plain(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as JSON values (anything else as its repr), keys sorted."""
    value = json.loads(json.dumps(dict(params), sort_keys=True, default=repr))
    return value if isinstance(value, dict) else {}
