"""Under ``-n 2`` every probe of one scenario, under every strategy, runs on
the same worker: a run is simulated once, and what the strategies of a
scenario share is worked out once, not once per worker they are spread on."""

from __future__ import annotations

import re
from collections import defaultdict
from types import SimpleNamespace

import pytest

from pytest_ctxeval.xdist_runs import biggest_first, scenario_scope

# Probes of one run come one strategy after another in the item order, so
# xdist's plain load scheduling would cut runs in half between the workers.
SCENARIO = """
    id: recall
    turns:
      - user: "For the record, the launch code is 4-4-2."
      - assistant: Noted.
      - user: "The staging database listens on port 5432."
      - assistant: Noted.
    probes:
      - {id: code, user: "What is the launch code?", expect: {contains: "4-4-2"}}
      - {id: port, user: "Which port does staging listen on?", expect: {contains: "5432"}}
"""
STRATEGIES = "full,headtail,sliding,truncate"
WORKER_LINE = re.compile(r"^\[(gw\d+)\].*(PASSED|FAILED) (\S+::\S+)$")


def test_a_probe_is_scheduled_with_its_scenario() -> None:
    def probe(nodeid: str) -> bool:
        return nodeid.endswith("]")

    assert scenario_scope("s/a.yaml::recall::code[full]", probe) == "s/a.yaml::recall"
    assert scenario_scope("s/a.yaml::recall::port[sliding]", probe) == "s/a.yaml::recall"
    assert scenario_scope("s/a.yaml::other::code[full]", probe) == "s/a.yaml::other"
    assert scenario_scope("tests/test_x.py::test_y", probe) == "tests/test_x.py::test_y"


def test_each_scenario_stays_on_one_worker(ctx) -> None:  # type: ignore[no-untyped-def]
    # Its runs under every strategy share its tokens, the oracle's reading of
    # its texts and its ground truth: one worker works them out once.
    for name in ("recall", "second", "third", "fourth"):
        ctx.scenario(name, SCENARIO.replace("id: recall", f"id: {name}"))
    result = ctx.run(
        "-n", "2", "-v", f"--ctx-strategy={STRATEGIES}", "--ctx-fail-on=never", "-p", "no:randomly"
    )
    workers: dict[str, set[str]] = defaultdict(set)
    for line in result.outlines:
        found = WORKER_LINE.match(line.strip())
        if found:
            workers[found[3].split("::")[1]].add(found[1])
    assert sorted(workers) == ["fourth", "recall", "second", "third"]
    assert all(len(used) == 1 for used in workers.values()), dict(workers)
    # ... and both workers did work: scenarios are still balanced.
    assert len(set().union(*workers.values())) == 2
    assert len(ctx.results()) == 32


def test_an_explicit_dist_mode_is_kept(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("-n", "2", "--dist", "loadfile", "-v", f"--ctx-strategy={STRATEGIES}")
    used = {m[1] for line in result.outlines if (m := WORKER_LINE.match(line.strip()))}
    assert len(used) == 1  # loadfile: one file, one worker


def test_the_scenario_with_the_most_work_is_handed_out_first() -> None:
    queue = {
        "s/a.yaml::short": {"a[full]": False, "a[sliding]": False},
        "tests/test_x.py::test_y": {"tests/test_x.py::test_y": False},
        "s/b.yaml::long": {"b[full]": False},
        "s/c.yaml::wide": {"c[full]": False, "c[sliding]": False, "c[truncate]": False},
        "s/d.yaml::unknown": {"d[full]": False},
    }
    sizes = {"s/a.yaml::short": 100, "s/b.yaml::long": 1_000, "s/c.yaml::wide": 300}
    biggest_first(queue, sizes.get)
    # items x session size: 1,000, 900, 200; then, as they were, what has no size.
    assert list(queue) == [
        "s/b.yaml::long",
        "s/c.yaml::wide",
        "s/a.yaml::short",
        "tests/test_x.py::test_y",
        "s/d.yaml::unknown",
    ]
    assert queue["s/c.yaml::wide"] == {"c[full]": False, "c[sliding]": False, "c[truncate]": False}


LONG_SCENARIO = """
    id: long
    turns:
      - generate: {kind: chitchat, turns: 150, seed: 1}
      - user: "For the record, the launch code is 4-4-2."
      - assistant: Noted.
    probes:
      - {id: code, user: "What is the launch code?", expect: {contains: "4-4-2"}}
"""


def test_under_xdist_a_long_scenario_does_not_wait_for_the_short_ones(ctx) -> None:  # type: ignore[no-untyped-def]
    # Collected last, but handed out first: run last, it would leave one
    # worker busy with it while the other has nothing left to do.
    for name in ("aa", "bb", "cc", "dd"):
        ctx.scenario(name, SCENARIO.replace("id: recall", f"id: {name}"))
    ctx.scenario("zz-long", LONG_SCENARIO)
    result = ctx.run(
        "-n", "2", "-v", "--ctx-strategy=full,sliding", "--ctx-fail-on=never", "-p", "no:randomly"
    )
    # Each worker's items are reported in the order it ran them.
    ran: dict[str, list[str]] = defaultdict(list)
    for line in result.outlines:
        found = WORKER_LINE.match(line.strip())
        if found and found[3].split("::")[1] not in ran[found[1]]:
            ran[found[1]].append(found[3].split("::")[1])
    assert sorted(sum(ran.values(), [])) == ["aa", "bb", "cc", "dd", "long"]
    # Handed out in collection order, it would go to whichever worker is
    # free after the short ones: never the first a worker runs.
    [worker] = [worker for worker, scenarios in ran.items() if "long" in scenarios]
    assert ran[worker][0] == "long", dict(ran)


class _Worker:
    """What the scheduler sees of an xdist worker: the items it is sent."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def test_a_crash_while_a_replacement_worker_is_still_collecting_loses_nothing(
    pytester: pytest.Pytester,
) -> None:
    # The order of xdist's events when a worker dies while its replacement
    # is still collecting: the crashed worker's runs go back to the queue
    # before the replacement can be sent any of them.
    from pytest_ctxeval.xdist_runs import ScenarioScheduling

    config = pytester.parseconfig("--tx", "2*popen")
    items = [f"s/{s}.yaml::{s}::{p}[full]" for s in ("a", "b") for p in ("x", "y", "z")]
    sched = ScenarioScheduling(config, None, lambda nodeid: nodeid.endswith("]"))
    first, second = _Worker("gw0"), _Worker("gw1")
    for worker in (first, second):
        sched.add_node(worker)
        sched.add_node_collection(worker, items)
    sched.schedule()
    assert first.sent == [0, 1, 2] and second.sent == [3, 4, 5]
    sched.mark_test_complete(first, 0)  # gw0 then dies running its second item
    replacement = _Worker("gw2")
    sched.add_node(replacement)  # started, its collection not in yet
    crashed = sched.remove_node(first)  # xdist's crash handling
    assert crashed == "s/a.yaml::a::y[full]"
    assert replacement.sent == []  # nothing booked to a worker that cannot be sent it
    sched.add_node_collection(replacement, items)
    sched.schedule()
    assert replacement.sent == [2]  # the rest of the crashed worker's run


def test_the_scheduler_hands_out_work_as_xdists_own_bookkeeping_would(
    pytester: pytest.Pytester,
) -> None:
    # The scheduler counts each worker's items left as reports come in;
    # xdist recounts every item it ever sent the worker for each report.
    # Driven through the same reports (and a crash), both send the same.
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    from pytest_ctxeval.xdist_runs import ScenarioScheduling

    class Recounting(ScenarioScheduling):  # type: ignore[misc]
        _pending_of = LoadScopeScheduling._pending_of
        mark_test_complete = LoadScopeScheduling.mark_test_complete

    config = pytester.parseconfig("--tx", "2*popen")
    items = [f"s/{s}.yaml::{s}::{p}[full]" for s in "abcdefg" for p in ("x", "y", "z", "w")]
    sent: list[list[list[int]]] = []
    for kind in (ScenarioScheduling, Recounting):
        sched = kind(config, None, lambda nodeid: nodeid.endswith("]"))
        workers = [_Worker("gw0"), _Worker("gw1")]
        for worker in workers:
            sched.add_node(worker)
            sched.add_node_collection(worker, items)
        sched.schedule()
        done = {worker: 0 for worker in workers}
        steps = 0
        while not sched.tests_finished and steps < 200:
            steps += 1
            worker = workers[steps % len(workers)]
            if steps == 9:  # gw1 dies; its replacement takes over its runs
                sched.remove_node(workers[1])
                dead = workers[1]
                workers[1] = _Worker("gw2")
                done[workers[1]] = 0
                sched.add_node(workers[1])
                sched.add_node_collection(workers[1], items)
                sched.schedule()
                continue
            if done[worker] < len(worker.sent):
                sched.mark_test_complete(worker, worker.sent[done[worker]])
                done[worker] += 1
        assert sched.tests_finished
        sent.append([worker.sent for worker in (*workers, dead)])
    ours, xdists = sent
    assert ours == xdists
    assert {index for indices in ours for index in indices} == set(range(len(items)))
    assert ours[1], "the replacement worker took over the crashed worker's runs"
