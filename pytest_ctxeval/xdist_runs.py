"""Under ``pytest -n N`` (xdist's default ``--dist load``), every probe of one
run (scenario file, scenario, strategy) goes to the same worker.

A worker simulates a run once and evaluates all of its probes together the
first time one of them is asked (see evaluate.runner); spread over two
workers, both would simulate it and ask every probe.  Runs are many and
small, so they still balance well.  Items that are not probes are scheduled
one by one, as ``--dist load`` schedules them.  An explicit other ``--dist``
mode is left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]


def run_scope(nodeid: str, is_probe: Callable[[str], bool]) -> str:
    """The unit of work ``nodeid`` belongs to: its run for a probe
    (``path::scenario::probe[strategy]`` -> ``path::scenario[strategy]``),
    itself otherwise."""
    if not is_probe(nodeid):
        return nodeid
    path, _, rest = nodeid.partition("::")
    scenario, _, item = rest.partition("::")
    _, _, strategy = item.partition("[")
    return f"{path}::{scenario}[{strategy}"


class RunScheduling(LoadScopeScheduling):  # type: ignore[misc]
    def __init__(self, config: Any, log: Any, is_probe: Callable[[str], bool]) -> None:
        super().__init__(config, log)
        self._is_probe = is_probe

    def _split_scope(self, nodeid: str) -> str:
        return run_scope(nodeid, self._is_probe)

    def remove_node(self, node: Any) -> str | None:
        """As ``--dist load`` does: the item a crashed worker was running is
        reported as crashed and not run again (scope scheduling would hand
        it to the replacement worker, which crashes in turn); the rest of
        that worker's runs go back to the queue."""
        crashed = next(
            (
                nodeid
                for unit in self.assigned_work.get(node, {}).values()
                for nodeid, done in unit.items()
                if not done
            ),
            None,
        )
        for unit in self.assigned_work.get(node, {}).values():
            if crashed in unit:
                unit[crashed] = True
        super().remove_node(node)
        return crashed
