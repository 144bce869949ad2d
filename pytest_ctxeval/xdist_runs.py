"""Under ``pytest -n N`` (xdist's default ``--dist load``), every probe of one
scenario (file and scenario id), under every strategy, goes to the same worker.

A worker simulates a run (scenario and strategy) once and evaluates all of
its probes together the first time one of them is asked (see
evaluate.runner); spread over two workers, both would simulate it and ask
every probe.  The strategies of one scenario share what a worker works out
once per scenario: the tokens of its texts, the oracle's reading of them and
the full-context ground truth of each probe; kept together, no two workers
work them out twice.

Scenarios go out biggest first, by their items times the length of their
session (as the workers that parsed them noted it): a long scenario handed
out last would leave one worker busy while the other waits.  Items that are
not probes are scheduled one by one, as ``--dist load`` schedules them,
after the scenarios.  An explicit other ``--dist`` mode is left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

# What the item a crashed worker was running says, when that worker was
# evaluating the item's scenario under every strategy at once.
_CRASHED_TOGETHER = (
    " (it was evaluating this scenario under every selected strategy at once, so any of"
    " them may have caused the crash; the worker that replaces it evaluates each item alone)"
)


def runs_together(config: Any, a_worker_crashed: bool) -> bool:
    """Whether a new worker evaluates a scenario's runs together: when --dist
    sends each scenario to one worker and no worker has crashed.  After a
    crash each item runs alone: a strategy that takes its process down then
    takes only its own items with it."""
    return config.getvalue("dist") in ("load", "loadscope", "loadfile") and not a_worker_crashed


def crash_text(report: Any, together_key: str) -> str:
    """xdist's line for the item a crashed worker (``report.node``) was
    running and, if the worker's input said it evaluates scenarios together
    (``together_key``), that the crash may come from another strategy's items."""
    worker_input = getattr(getattr(report, "node", None), "workerinput", None) or {}
    return f"{report.longrepr}{_CRASHED_TOGETHER if worker_input.get(together_key) else ''}"


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
    def __init__(
        self,
        config: Any,
        log: Any,
        is_probe: Callable[[str], bool],
        session_size: Callable[[str], int | None] = lambda scope: None,
    ) -> None:
        """``session_size``: the characters of a scenario's session, by its
        scope, or None when it is not known."""
        super().__init__(config, log)
        self._is_probe = is_probe
        self._session_size = session_size
        self._ordered = False
        # Items each worker has been sent and not yet reported: xdist's own
        # count walks every item it ever sent that worker, for each report
        # (quadratic in a run of thousands of items).
        self._left: dict[Any, int] = {}
        # Each worker's collection by node id: xdist searches the list for
        # every item it sends.
        self._indexes: dict[Any, dict[str, int]] = {}

    def _split_scope(self, nodeid: str) -> str:
        return scenario_scope(nodeid, self._is_probe)

    def _assign_work_unit(self, node: Any) -> None:
        if not self._ordered:  # the queue is complete before the first unit goes out
            self._ordered = True
            biggest_first(self.workqueue, self._session_size)
        # As --dist loadscope sends a unit, each item found by its node id.
        scope, unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[scope] = unit
        if node not in self._indexes:
            collection = self.registered_collections[node]
            self._indexes[node] = {nodeid: i for i, nodeid in enumerate(collection)}
        index = self._indexes[node]
        sent = [index[nodeid] for nodeid, done in unit.items() if not done]
        self._left[node] = self._left.get(node, 0) + len(sent)
        node.send_runtest_some(sent)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        unit = self.assigned_work[node][self._split_scope(nodeid)]
        if not unit[nodeid]:
            self._left[node] -= 1
        unit[nodeid] = True
        self._reschedule(node)

    def _pending_of(self, workload: dict[str, dict[str, bool]]) -> int:
        for node, work in self.assigned_work.items():
            if work is workload and node in self._left:
                return self._left[node]
        return int(super()._pending_of(workload))

    def _reschedule(self, node: Any) -> None:
        # A replacement worker is known from its start but can only be sent
        # items once its collection is in.  Handed a run before that (when
        # another worker crashes and its runs go back to the queue), the run
        # would be booked to it but never sent: xdist's crash handling stops
        # at the missing collection, the crashed item gets no record, and the
        # run ends in an internal error.  It gets its work when its
        # collection arrives, as every worker then does.
        if node not in self.registered_collections:
            return
        super()._reschedule(node)

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
        work = self.assigned_work.get(node, {})
        for unit in work.values():
            if crashed in unit:
                unit[crashed] = True
        # Only the runs with items still to do go back to the queue.  A
        # finished one handed out again would be sent as no items at all: its
        # worker would never report back, nothing would schedule the rest of
        # the queue, and the run would wait for ever.
        for scope in [scope for scope, unit in work.items() if all(unit.values())]:
            del work[scope]
        super().remove_node(node)
        self._left.pop(node, None)
        self._indexes.pop(node, None)
        return crashed


def biggest_first(
    queue: dict[str, dict[str, bool]], session_size: Callable[[str], int | None]
) -> None:
    """Reorder ``queue`` (scope -> items) in place: the scopes whose size is
    known, most work first (items x session size; ties keep their order),
    then the others as they were."""
    sized = []
    unsized = []
    for scope, items in queue.items():
        size = session_size(scope)
        if size is None:
            unsized.append((scope, items))
        else:
            sized.append((len(items) * size, scope, items))
    sized.sort(key=lambda entry: -entry[0])
    ordered = [(scope, items) for _, scope, items in sized] + unsized
    queue.clear()
    queue.update(ordered)
