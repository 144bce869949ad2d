"""Small edges of the ``ctxeval`` command line: output piped into a reader
that stops early (``ctxeval schema | head``)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LONG_SCENARIO = REPO / "scenarios/agent-50-turns.yaml"
# What the console script runs.
CTXEVAL = [
    sys.executable,
    "-c",
    "import sys; from pytest_ctxeval.cli import main; sys.exit(main())",
]


def read_a_line_then_close(*argv: str) -> tuple[int, str]:
    """Run ``ctxeval ARGV`` into a pipe, read its first line and close the
    pipe, as ``| head -1`` does: (exit status, stderr)."""
    read_end, write_end = os.pipe()
    # A one-page pipe: the command is still writing when the reader leaves,
    # however short its output, so the broken pipe always happens.
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [*CTXEVAL, *argv],
        stdout=write_end,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        assert reader.readline()
    _, err = process.communicate(timeout=120)
    return process.returncode, err.decode()


@pytest.mark.parametrize(
    "argv",
    [("schema",), ("show", str(LONG_SCENARIO))],
    ids=["schema", "show"],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(argv: tuple[str, ...]) -> None:
    code, err = read_a_line_then_close(*argv)
    assert "BrokenPipe" not in err and "Traceback" not in err, err
    assert err == ""
    assert code == 0


def test_report_writes_the_item_table_as_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    from pytest_ctxeval.cli import main
    from pytest_ctxeval.results.record import ResultRecord
    from pytest_ctxeval.results.store import write_results

    def rec(**kw: object) -> ResultRecord:
        base: dict[str, object] = {
            "scenario": "needle",
            "strategy": "full",
            "model": "ctxeval/oracle",
            "probe": "p1",
            "verdict": "pass",
            "classification": "ok",
            "prompt_tokens": 400,
            "full_prompt_tokens": 400,
            "cumulative_input_tokens": 1000,
        }
        base.update(kw)
        return ResultRecord(**base)  # type: ignore[arg-type]

    results = tmp_path / "results.jsonl"
    write_results(
        results,
        [
            rec(),
            rec(strategy="=cmd", verdict="error", classification="error", prompt_tokens=0),
        ],
    )
    table = tmp_path / "items.csv"
    argv = ["report", str(results), "-o", str(tmp_path / "r.html"), "--csv", str(table)]
    assert main(argv) == 0
    assert f"items: {table} (CSV)" in capsys.readouterr().out
    rows = list(csv.reader(table.open(encoding="utf-8")))
    assert rows[0][:5] == ["scenario", "strategy", "probe", "classification", "pytest"]
    assert rows[1][1] == "'=cmd" and rows[1][5:] == ["not measured"] * 4  # no formula
    assert rows[2][1:4] == ["full", "p1", "ok"] and rows[2][5] == "400"
