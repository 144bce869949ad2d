"""The run history folder: ``runs/<run_id>/`` next to the results file, one
folder per run with its results, its report and a marker file.  The newest
run's results and report are hard links to the latest ones (no second copy
on disk): the plugin writes every file anew, never in place.  The results
of older runs are kept compressed (see packing).

Only a folder holding the marker is a run: pruning and listing never touch
anything else a user keeps there.  Each file is written whole to a temporary
file and renamed into place, so a full disk leaves the old file or none,
never half of one."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..results.record import ResultRecord
from ..safe_files import replace_text, replace_with_link

RUNS_FOLDER = "runs"
MARKER = "ctxeval-run.json"
RESULTS_NAME = "results.jsonl"
# The results of a run older than the newest, gzip-compressed (see packing).
PACKED_RESULTS_NAME = RESULTS_NAME + ".gz"
REPORT_NAME = "ctxeval.html"
# What a marker says it is: a folder this plugin wrote.
MARKER_KIND = "pytest-ctxeval run"


def runs_folder(results: Path) -> Path:
    """Where the history of a results file lives: ``runs/`` beside it."""
    return results.parent / RUNS_FOLDER


@dataclass(frozen=True)
class RunEntry:
    """One kept run, as its marker describes it."""

    folder: Path
    run_id: str
    started_at: str = ""
    git_commit: str | None = None
    model: str = ""
    strategies: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    # Items of the report that came from earlier runs (a partial rerun).
    merged: int = 0
    saved_at: str = ""

    @property
    def results(self) -> Path:
        """The run's results file: compressed once a later run has been kept
        (the compressed file is whole as soon as it has its name)."""
        packed = self.folder / PACKED_RESULTS_NAME
        if packed.is_file() and not packed.is_symlink():
            return packed
        return self.folder / RESULTS_NAME

    @property
    def report(self) -> Path:
        return self.folder / REPORT_NAME


def counts(records: Iterable[ResultRecord]) -> dict[str, int]:
    """passed / failed / error and items, as ``ctxeval runs`` shows them."""
    found = {"passed": 0, "failed": 0, "error": 0, "items": 0}
    for record in records:
        found["items"] += 1
        if record.classification == "error" or record.verdict == "error":
            found["error"] += 1
        elif record.verdict == "pass":
            found["passed"] += 1
        else:
            found["failed"] += 1
    return found


def marker_text(
    run_id: str,
    records: list[ResultRecord],
    *,
    started_at: str,
    git_commit: str | None,
    model: str,
    strategies: list[str],
) -> str:
    merged = sum(1 for r in records if r.run_id and r.run_id != run_id)
    data: dict[str, Any] = {
        "kind": MARKER_KIND,
        "run_id": run_id,
        "started_at": started_at,
        "git_commit": git_commit,
        "model": model,
        "strategies": strategies,
        "counts": counts(records),
        "merged": merged,
        # To the microsecond: two runs started in the same second still sort.
        "saved_at": datetime.now(timezone.utc).isoformat(),
    }
    return json.dumps(data, indent=2) + "\n"


def write_records(path: Path, records: Iterable[ResultRecord]) -> None:
    """A results file written whole under a temporary name, then renamed."""
    from ..results.store import write_results

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write_results(Path(tmp), records)  # the writer replaces the name mkstemp reserved
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_run(
    folder: Path,
    run_id: str,
    records: list[ResultRecord],
    *,
    report: Path | None,
    marker: str,
    keep: int,
    results_file: Path | None = None,
) -> Path | None:
    """Keep this run under ``folder/<run_id>/`` and prune to ``keep`` runs;
    the run's folder, or None when ``keep`` is 0.  OSError when a file cannot
    be written (``folder`` a symbolic link is refused: ELOOP).  ``results_file``:
    a file that holds ``records`` already, line for line, to copy."""
    if folder.is_symlink():
        raise OSError(40, "the run history folder is a symbolic link", str(folder))
    if keep <= 0:
        prune(folder, 0)
        return None
    mine = folder / run_id
    if results_file is not None and not results_file.is_symlink():
        # The run's results file holds these very records: linked, not written again.
        replace_with_link(mine / RESULTS_NAME, results_file)
    else:
        write_records(mine / RESULTS_NAME, records)
    if report is not None and report.is_file() and not report.is_symlink():
        replace_with_link(mine / REPORT_NAME, report)
    # Last: a folder is listed as a run only once everything is in it.
    replace_text(mine / MARKER, marker)
    prune(folder, keep)
    return mine


def read_entry(folder: Path) -> RunEntry | None:
    """The run a folder holds; None when it is not one this plugin wrote."""
    if folder.is_symlink() or not folder.is_dir():
        return None
    marker = folder / MARKER
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kind") != MARKER_KIND:
        return None
    return RunEntry(
        folder=folder,
        run_id=str(data.get("run_id") or folder.name),
        started_at=str(data.get("started_at") or ""),
        git_commit=data.get("git_commit") or None,
        model=str(data.get("model") or ""),
        strategies=[str(s) for s in data.get("strategies") or []],
        counts={str(k): int(v) for k, v in (data.get("counts") or {}).items()},
        merged=int(data.get("merged") or 0),
        saved_at=str(data.get("saved_at") or ""),
    )


def list_runs(folder: Path) -> list[RunEntry]:
    """The kept runs, oldest first (by start time, then when each was kept)."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    entries = [entry for child in folder.iterdir() if (entry := read_entry(child)) is not None]
    return sorted(entries, key=lambda e: (e.started_at, e.saved_at, e.run_id))


def prune(folder: Path, keep: int) -> list[Path]:
    """Remove the oldest runs beyond ``keep``; what was removed."""
    entries = list_runs(folder)
    doomed = entries[: max(len(entries) - keep, 0)]
    for entry in doomed:
        shutil.rmtree(entry.folder)
    return [entry.folder for entry in doomed]
