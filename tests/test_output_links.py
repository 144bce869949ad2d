"""Outputs never follow a symbolic link: a pull request can commit
``reports/results.jsonl`` (or the report, the cassette folder, the baseline)
as a link to ``~/.bashrc``; the run refuses it as a usage error before its
first model call, and every file it creates is written without following a
link, so the file the link points at is never touched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import assert_no_traceback, output, read_jsonl
from fake_openai_server import FakeOpenAIServer

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""

VICTIM_TEXT = "export PATH=/usr/bin  # the user's own file\n"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def victim(ctx, name: str = "victim-bashrc") -> Path:
    """A file outside the project that a committed link points at."""
    path = ctx.path.parent / f"{ctx.path.name}-{name}"
    path.write_text(VICTIM_TEXT, encoding="utf-8")
    return path


def link(ctx, relpath: str, target: Path) -> Path:
    path = ctx.path / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
    return path


# (case id, link path in the project, whether it points at a folder, option, extra args)
CASES = [
    ("results", "reports/results.jsonl", False, "--ctx-results", ()),
    ("report", "reports/ctxeval.html", False, "--ctx-report", ()),
    ("reports-folder", "reports", True, "--ctx-results", ()),
    ("cassette-folder", "reports/cassettes", True, "--ctx-cassettes", ()),
    ("baseline", "ctxeval-baseline.json", False, "--ctx-baseline", ("--ctx-update-baseline",)),
    ("summary", "summary.md", False, "--ctx-summary", ("--ctx-summary=summary.md",)),
]


@pytest.mark.parametrize(
    ("case", "relpath", "folder", "option", "args"), CASES, ids=[c[0] for c in CASES]
)
def test_an_output_that_is_a_link_is_refused_before_any_model_call(
    ctx, server, case, relpath, folder, option, args
):
    target = victim(ctx)
    if folder:
        target = ctx.path.parent / f"{ctx.path.name}-victim-dir"
        target.mkdir()
        (target / "authorized_keys").write_text(VICTIM_TEXT, encoding="utf-8")
    link(ctx, relpath, target)
    ctx.scenario("recall", SCENARIO)
    model = ("--ctx-model=openai/test-model", f"--ctx-api-base={server.url}")
    result = ctx.run("--ctx-strategy=full", *model, *args)
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    line = next(line for line in text.splitlines() if f"{option}: " in line)
    assert str(ctx.path / relpath) in line, line
    assert "symbolic link" in line, line
    assert_no_traceback(result)
    assert server.chat_requests == []
    if folder:
        assert sorted(p.name for p in target.iterdir()) == ["authorized_keys"]
        assert (target / "authorized_keys").read_text(encoding="utf-8") == VICTIM_TEXT
    else:
        assert target.read_text(encoding="utf-8") == VICTIM_TEXT


@pytest.mark.parametrize("mode", [("-n", "0"), ("-n", "2")], ids=["n0", "n2"])
def test_a_linked_results_file_is_refused_with_and_without_workers(ctx, mode):
    target = victim(ctx)
    link(ctx, "reports/results.jsonl", target)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", *mode)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert "--ctx-results: " in output(result)
    assert target.read_text(encoding="utf-8") == VICTIM_TEXT


def test_a_link_among_the_files_a_run_creates_is_replaced_never_followed(ctx):
    """The baseline's temporary file and a stale report are not checked up
    front; they are written without following a link all the same."""
    target = victim(ctx)
    link(ctx, "ctxeval-baseline.json.tmp", target)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-update-baseline")
    assert result.ret == 0, output(result)
    assert target.read_text(encoding="utf-8") == VICTIM_TEXT
    assert read_jsonl(ctx.path / "reports" / "results.jsonl")[0]["verdict"] == "pass"
    assert (ctx.path / "ctxeval-baseline.json").is_file()
    assert not (ctx.path / "ctxeval-baseline.json").is_symlink()


def test_a_link_above_the_project_is_not_its_business(ctx, tmp_path_factory):
    """Only links inside the project are refused: a home folder that is
    itself a link (as /tmp is on macOS) still works."""
    elsewhere = tmp_path_factory.mktemp("real-out")
    link(ctx, "out-link", elsewhere)
    ctx.scenario("recall", SCENARIO)
    outside = elsewhere / "results.jsonl"
    result = ctx.run("--ctx-strategy=full", f"--ctx-results={outside}")
    assert result.ret == 0, output(result)
    assert read_jsonl(outside)[0]["verdict"] == "pass"
