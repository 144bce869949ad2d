"""Kept runs' results compressed: whole or not at all, never following a
link, and tidy after a run killed on the way."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pytest_ctxeval.history import packing
from pytest_ctxeval.history.packing import pack_run, pack_runs
from pytest_ctxeval.history.store import MARKER, MARKER_KIND, list_runs

LINES = b"".join(
    json.dumps({"probe": f"p{i}", "answer": "the port is 5432 " * 20}).encode() + b"\n"
    for i in range(200)
)


def kept_run(folder: Path, run_id: str, started_at: str) -> Path:
    run = folder / run_id
    run.mkdir(parents=True)
    marker = {"kind": MARKER_KIND, "run_id": run_id, "started_at": started_at}
    (run / MARKER).write_text(json.dumps(marker), encoding="utf-8")
    (run / "results.jsonl").write_bytes(LINES)
    return run


def test_every_kept_run_is_compressed_once_and_reads_back_the_same(tmp_path: Path) -> None:
    runs = [kept_run(tmp_path, f"run{i}", f"2026-12-0{i + 1}") for i in range(3)]
    (tmp_path / "notes").mkdir()  # not a run: left alone
    (tmp_path / "notes" / "results.jsonl").write_bytes(LINES)
    assert pack_runs(tmp_path) == runs
    for run in runs:
        assert sorted(p.name for p in run.iterdir()) == [MARKER, "results.jsonl.gz"]
        assert gzip.decompress((run / "results.jsonl.gz").read_bytes()) == LINES
    assert [entry.results for entry in list_runs(tmp_path)] == [
        run / "results.jsonl.gz" for run in runs
    ]
    assert (tmp_path / "notes" / "results.jsonl").read_bytes() == LINES
    assert pack_runs(tmp_path) == []  # nothing left to do


def test_a_run_killed_while_packing_is_finished_by_the_next(tmp_path: Path) -> None:
    # Killed after the rename: both files (the compressed one may be cut
    # short, should the disk have failed it: compressed again).
    renamed = kept_run(tmp_path, "renamed", "2026-12-01")
    (renamed / "results.jsonl.gz").write_bytes(gzip.compress(LINES)[:50])
    # Killed while writing: a temporary file beside the plain one.
    writing = kept_run(tmp_path, "writing", "2026-12-02")
    (writing / ".results.jsonl.gz.x1y2.tmp").write_bytes(b"\x1f\x8b half")
    assert pack_runs(tmp_path) == [renamed, writing]
    for run in (renamed, writing):
        assert sorted(p.name for p in run.iterdir()) == [MARKER, "results.jsonl.gz"]
        assert gzip.decompress((run / "results.jsonl.gz").read_bytes()) == LINES


def test_a_linked_compressed_file_is_replaced_not_trusted(tmp_path: Path) -> None:
    run = kept_run(tmp_path, "run", "2026-12-01")
    elsewhere = tmp_path / "elsewhere.gz"
    elsewhere.write_bytes(gzip.compress(b"not these results\n"))
    (run / "results.jsonl.gz").symlink_to(elsewhere)
    (entry,) = list_runs(tmp_path)
    assert entry.results == run / "results.jsonl"  # the link is not read as the run's
    assert pack_run(run)
    assert not (run / "results.jsonl.gz").is_symlink()
    assert gzip.decompress((run / "results.jsonl.gz").read_bytes()) == LINES
    assert gzip.decompress(elsewhere.read_bytes()) == b"not these results\n"


def test_a_linked_results_file_is_not_followed(tmp_path: Path) -> None:
    run = kept_run(tmp_path, "run", "2026-12-01")
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(LINES)
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").symlink_to(elsewhere)
    assert pack_run(run) is False
    assert (run / "results.jsonl").is_symlink() and elsewhere.read_bytes() == LINES
    assert not (run / "results.jsonl.gz").exists()


def test_a_run_that_cannot_be_compressed_stays_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = kept_run(tmp_path, "run", "2026-12-01")

    def full_disk(path: Path, source: Path, *, level: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(packing, "replace_with_gzip", full_disk)
    work = packing.Packing(tmp_path)  # as a run starts it: the error is not raised
    work.wait()
    assert sorted(p.name for p in run.iterdir()) == [MARKER, "results.jsonl"]
    assert (run / "results.jsonl").read_bytes() == LINES
