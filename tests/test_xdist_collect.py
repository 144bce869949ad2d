"""Under ``-n 2`` each scenario file is parsed once per run: the workers share
their parsing through a folder of the run, and still collect the same items
and report the same problems."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ctxeval import xdist_collect
from pytest_ctxeval.scenario.errors import Problem, ScenarioError
from pytest_ctxeval.xdist_collect import (
    SharedParsing,
    file_key,
    make_folder,
    scenario_sizes,
    was_parsed,
)

SCENARIO = """
    id: {name}
    turns:
      - user: "For the record, the launch code is 4-4-2."
      - assistant: Noted.
    probes:
      - {{id: code, user: "What is the launch code?", expect: {{contains: "4-4-2"}}}}
"""

# Written into the test project: every process logs each file it parses
# itself.  The class is put back as it was: an in-process run shares it.
COUNTING_CONFTEST = """
    from pytest_ctxeval.collect import ScenarioFile

    def pytest_configure(config):
        parse = ScenarioFile.parse

        def counted(self):
            with open("parsed.log", "a", encoding="utf-8") as log:
                log.write(self.path.name + "\\n")
            return parse(self)

        ScenarioFile.parse = counted
        config.add_cleanup(lambda: setattr(ScenarioFile, "parse", parse))
"""


@pytest.mark.parametrize("workers", ["2", "0"])
def test_each_scenario_file_is_parsed_once(ctx, workers) -> None:  # type: ignore[no-untyped-def]
    names = [f"s{i}" for i in range(8)]
    for name in names:
        ctx.scenario(name, SCENARIO.format(name=name))
    # YAML data beside them: read once to tell it is not a scenario, then left alone.
    ctx.scenario("settings", "name: staging\nports: [5432, 6379]\n")
    ctx.write("conftest.py", COUNTING_CONFTEST)
    result = ctx.run("-n", workers, "--ctx-strategy=full,sliding")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    parsed = (ctx.path / "parsed.log").read_text().split()
    assert sorted(parsed) == sorted([f"{name}.yaml" for name in names] + ["settings.yaml"])
    assert len(ctx.results()) == 16  # and every worker still collected every item


def test_a_broken_file_is_reported_with_its_line_once_parsed_elsewhere(ctx) -> None:  # type: ignore[no-untyped-def]
    for name in ("a", "b", "c"):
        ctx.scenario(name, SCENARIO.format(name=name))
    ctx.scenario("broken", SCENARIO.format(name="broken").replace("turns:", "turns: [oops"))
    result = ctx.run("-n", "2", "--ctx-strategy=full")
    text = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert text.count("ERROR collecting scenarios/broken.yaml") == 1
    assert "scenarios/broken.yaml:3:9: invalid YAML" in text
    assert "Traceback" not in text
    assert len(ctx.results()) == 3


# -- two workers in one process, sharing one folder ---------------------------------


@dataclasses.dataclass(frozen=True)
class FakeScenario:
    id: str
    messages: tuple[dict[str, str], ...]


def fake(name: str) -> FakeScenario:
    """A file's one scenario: its session is as many characters long as the name."""
    return FakeScenario(f"{name}-scenario", ({"role": "user", "content": name},))


class Files:
    """Fake scenario files: parsing one returns its name's scenarios and counts the call."""

    def __init__(self, *names: str, broken: str = "", buggy: str = "", data: str = "") -> None:
        self.paths = [Path(f"/project/scenarios/{name}.yaml") for name in names]
        self.broken, self.buggy, self.data = broken, buggy, data
        self.calls: list[str] = []

    def parser(self, path: Path):  # type: ignore[no-untyped-def]
        def parse() -> list[FakeScenario] | None:
            self.calls.append(path.stem)
            if path.stem == self.data:
                return None  # YAML, but not a scenario file
            if path.stem == self.broken:
                raise ScenarioError([Problem(str(path), 3, 5, "expected a list")])
            if path.stem == self.buggy:
                raise KeyError("a bug")
            return [fake(path.stem)]

        return parse

    def hand_to(self, worker: SharedParsing) -> None:
        for path in self.paths:
            worker.expect(path, self.parser(path))

    def collect(self, worker: SharedParsing) -> dict[str, object]:
        found: dict[str, object] = {}
        for path in self.paths:
            try:
                found[path.stem] = worker.conversations(path, self.parser(path))
            except ScenarioError as problem:
                found[path.stem] = str(problem)
            except KeyError as bug:
                found[path.stem] = f"bug: {bug}"
        return found


def test_workers_collect_alike_and_parse_each_file_once(tmp_path: Path) -> None:
    files = Files("a", "b", "c", "d", broken="c", data="d")
    first, second = SharedParsing(tmp_path, 0), SharedParsing(tmp_path, 1)
    files.hand_to(first)
    files.hand_to(second)
    seen_first = files.collect(first)
    seen_second = files.collect(second)
    assert seen_first == seen_second
    assert seen_first["a"] == [fake("a")]
    assert seen_first["c"] == "/project/scenarios/c.yaml:3:5: expected a list"
    assert seen_first["d"] is None
    assert sorted(files.calls) == ["a", "b", "c", "d"]
    # The controller tells scenario files by the folder: a broken one is one, data is not.
    assert [was_parsed(tmp_path, path) for path in files.paths] == [True, True, True, False]
    assert not was_parsed(tmp_path, "/project/scenarios/other.yaml")
    # ...and how long each scenario's session is, to hand out the longest first.
    assert [scenario_sizes(tmp_path, path) for path in files.paths] == [
        {"a-scenario": 1},
        {"b-scenario": 1},
        {},
        {},
    ]


def test_workers_take_files_from_opposite_ends(tmp_path: Path) -> None:
    files = Files("a", "b", "c", "d")
    second = SharedParsing(tmp_path, 1)
    files.hand_to(second)
    second.conversations(files.paths[-1], files.parser(files.paths[-1]))
    assert files.calls == ["d", "c", "b", "a"]


def test_a_file_whose_parser_crashed_is_parsed_again(tmp_path: Path) -> None:
    files = Files("a", "b")
    # Claimed by a process that has ended without leaving an outcome.
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (tmp_path / f"{file_key(files.paths[0])}.claim").write_text(ended.stdout.strip())
    worker = SharedParsing(tmp_path, 0)
    files.hand_to(worker)
    assert files.collect(worker) == {"a": [fake("a")], "b": [fake("b")]}
    assert sorted(files.calls) == ["a", "b"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are read from /proc")
def test_a_claimer_that_crashed_and_was_not_reaped_holds_nobody_up(tmp_path: Path) -> None:
    files = Files("a", "b")
    # A crashed worker that xdist has not reaped yet: a zombie, which
    # kill(pid, 0) still finds.
    crashed = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat = Path(f"/proc/{crashed.pid}/stat")
        deadline = time.monotonic() + 30
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never ended"
            time.sleep(0.01)
        (tmp_path / f"{file_key(files.paths[0])}.claim").write_text(str(crashed.pid))
        worker = SharedParsing(tmp_path, 0)
        files.hand_to(worker)
        started = time.monotonic()
        assert files.collect(worker) == {"a": [fake("a")], "b": [fake("b")]}
        # Parsed here at once, not after the two-minute wait for a live claimer.
        assert time.monotonic() - started < xdist_collect.WAIT_LIMIT_S / 4
        assert sorted(files.calls) == ["a", "b"]
    finally:
        crashed.wait()


def test_a_claimer_that_never_leaves_an_outcome_holds_nobody_up_for_ever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(xdist_collect, "WAIT_LIMIT_S", 0.05)
    files = Files("a", "b")
    # Claimed by a live process (this one) that never leaves an outcome.
    (tmp_path / f"{file_key(files.paths[0])}.claim").write_text(str(os.getpid()))
    worker = SharedParsing(tmp_path, 0)
    files.hand_to(worker)
    assert files.collect(worker) == {"a": [fake("a")], "b": [fake("b")]}


def test_without_a_usable_folder_each_worker_parses_its_files(tmp_path: Path) -> None:
    files = Files("a", "b", broken="b")
    worker = SharedParsing(tmp_path / "gone", 1)
    files.hand_to(worker)
    found = files.collect(worker)
    assert found == {"a": [fake("a")], "b": "/project/scenarios/b.yaml:3:5: expected a list"}
    assert sorted(files.calls) == ["a", "b"]


def test_a_bug_while_parsing_is_raised_where_its_file_is_collected(tmp_path: Path) -> None:
    files = Files("a", "b", buggy="a")
    first, second = SharedParsing(tmp_path, 0), SharedParsing(tmp_path, 1)
    files.hand_to(first)
    files.hand_to(second)
    # Each worker's error belongs to file a, not to the file it was collecting
    # when it parsed a ahead of time.
    assert files.collect(first) == {"a": "bug: 'a bug'", "b": [fake("b")]}
    assert files.collect(second) == {"a": "bug: 'a bug'", "b": [fake("b")]}


def test_the_folder_is_private_to_its_user() -> None:
    folder = make_folder()
    try:
        assert folder.stat().st_mode & 0o077 == 0
    finally:
        folder.rmdir()
