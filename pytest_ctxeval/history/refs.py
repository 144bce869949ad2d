"""What a run named on the command line is: ``latest``, ``previous``, a run
id (or the start of one) under reports/runs/, a run's folder, or a results
file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .store import RESULTS_NAME, RUNS_FOLDER, RunEntry, list_runs, read_entry


class RunNotFound(ValueError):
    """The message says what was looked for, where, and what is there."""


@dataclass(frozen=True)
class NamedRun:
    label: str
    results: Path
    report: Path | None = None


def runs_of(reports: Path) -> list[RunEntry]:
    return list_runs(reports / RUNS_FOLDER)


def resolve(ref: str, reports: Path) -> NamedRun:
    runs = runs_of(reports)
    if ref in ("latest", "previous"):
        wanted = 1 if ref == "latest" else 2
        if len(runs) < wanted:
            raise RunNotFound(
                f"{ref!r}: {reports / RUNS_FOLDER} keeps {len(runs)} run(s); "
                f"{ref!r} needs {wanted} (each pytest run that writes results adds one)"
            )
        return _named(runs[-wanted])
    exact = [e for e in runs if e.run_id == ref] or [e for e in runs if e.run_id.startswith(ref)]
    if len(exact) == 1:
        return _named(exact[0])
    path = Path(ref)
    if path.is_dir() and (entry := read_entry(path)) is not None:
        return _named(entry)
    if path.is_dir() and (path / RESULTS_NAME).is_file():
        return NamedRun(str(path), path / RESULTS_NAME)
    if path.is_file():
        return NamedRun(str(path), path)
    if len(exact) > 1:
        raise RunNotFound(f"{ref!r} starts {len(exact)} run ids; give more of it")
    known = ", ".join(e.run_id for e in runs[-5:]) or "none"
    raise RunNotFound(
        f"{ref!r} is no run id under {reports / RUNS_FOLDER} and no results file; "
        f"expected latest, previous, a run id (latest runs: {known}) or a results file"
    )


def _named(entry: RunEntry) -> NamedRun:
    report = entry.report if entry.report.is_file() else None
    return NamedRun(entry.run_id, entry.results, report)
