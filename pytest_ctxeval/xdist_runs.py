"""Under ``pytest -n N`` (xdist's default ``--dist load``), every probe of one
scenario (file and scenario id), under every strategy, goes to the same worker.

A worker simulates a run (scenario and strategy) once and evaluates all of
its probes together the first time one of them is asked (see
evaluate.runner); spread over two workers, both would simulate it and ask
every probe.  The strategies of one scenario share what a worker works out
once per scenario: the tokens of its texts, the oracle's reading of them and
the full-context ground truth of each probe; kept together, no two workers
work them out twice.  xdist hands out the biggest scenarios first, so they
still balance well.  Items that are not probes are scheduled one by one, as
``--dist load`` schedules them.  An explicit other ``--dist`` mode is left
alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]


def scenario_scope(nodeid: str, is_probe: Callable[[str], bool]) -> str:
    """The unit of work ``nodeid`` belongs to: its scenario for a probe
    (``path::scenario::probe[strategy]`` -> ``path::scenario``), itself
    otherwise."""
    if not is_probe(nodeid):
        return nodeid
    path, _, rest = nodeid.partition("::")
    scenario, _, _ = rest.partition("::")
    return f"{path}::{scenario}"


class ScenarioScheduling(LoadScopeScheduling):  # type: ignore[misc]
    def __init__(self, config: Any, log: Any, is_probe: Callable[[str], bool]) -> None:
        super().__init__(config, log)
        self._is_probe = is_probe

    def _split_scope(self, nodeid: str) -> str:
        return scenario_scope(nodeid, self._is_probe)

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
