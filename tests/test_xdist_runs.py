"""Under ``-n 2`` every probe of one run (scenario x strategy) runs on the
same worker: a run is simulated once, not once per worker it is spread on."""

from __future__ import annotations

import re
from collections import defaultdict

from pytest_ctxeval.xdist_runs import run_scope

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


def test_a_probes_run_is_scoped_by_file_scenario_and_strategy() -> None:
    def probe(nodeid: str) -> bool:
        return nodeid.endswith("]")

    assert run_scope("s/a.yaml::recall::code[full]", probe) == "s/a.yaml::recall[full]"
    assert run_scope("s/a.yaml::recall::port[full]", probe) == "s/a.yaml::recall[full]"
    assert run_scope("s/a.yaml::recall::code[sliding]", probe) == "s/a.yaml::recall[sliding]"
    assert run_scope("tests/test_x.py::test_y", probe) == "tests/test_x.py::test_y"


def test_each_run_stays_on_one_worker(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.scenario("recall", SCENARIO)
    result = ctx.run(
        "-n", "2", "-v", f"--ctx-strategy={STRATEGIES}", "--ctx-fail-on=never", "-p", "no:randomly"
    )
    workers: dict[str, set[str]] = defaultdict(set)
    for line in result.outlines:
        found = WORKER_LINE.match(line.strip())
        if found:
            strategy = found[3].rsplit("[", 1)[1]
            workers[strategy].add(found[1])
    assert sorted(workers) == sorted(f"{s}]" for s in STRATEGIES.split(","))
    assert all(len(used) == 1 for used in workers.values()), dict(workers)
    # ... and both workers did work: runs are still balanced.
    assert len(set().union(*workers.values())) == 2
    assert len(ctx.results()) == 8


def test_an_explicit_dist_mode_is_kept(ctx) -> None:  # type: ignore[no-untyped-def]
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("-n", "2", "--dist", "loadfile", "-v", f"--ctx-strategy={STRATEGIES}")
    used = {m[1] for line in result.outlines if (m := WORKER_LINE.match(line.strip()))}
    assert len(used) == 1  # loadfile: one file, one worker
