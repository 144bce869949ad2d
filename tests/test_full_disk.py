"""A full disk, or a file-size limit, under reports/: the run ends with one
line naming the path and what was lost, a distinct exit code (8), and the
records already written intact; never an INTERNALERROR.

The limit is the kernel's RLIMIT_FSIZE on the pytest process (with SIGXFSZ
ignored, a write past it fails with EFBIG as on a full disk)."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

OUTPUT_LOST = 10

PROBES = "\n".join(
    f'  - {{id: p{i}, user: "What is the launch code?", expect: {{contains: "ZEBRA-42"}}}}'
    for i in range(12)
)
SCENARIO = f"""\
id: recall
turns:
  - user: "The launch code is ZEBRA-42."
  - assistant: Noted.
probes:
{PROBES}
"""


def run_limited(project: Path, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ctx-strategy=full", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_files,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "recall.yaml").write_text(SCENARIO, encoding="utf-8")
    return tmp_path


def whole_records(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), "a torn last line"
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_results_past_the_file_size_limit_end_with_one_line_and_exit_8(project, xdist):
    done = run_limited(project, 5_000, *xdist)
    text = done.stdout + done.stderr
    assert done.returncode == OUTPUT_LOST, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    results = project / "reports" / "results.jsonl"
    lines = [line for line in text.splitlines() if line.startswith("ctxeval: could not write")]
    assert any(str(results) in line and "records" in line for line in lines), text
    kept = whole_records(results)
    assert 0 < len(kept) < 12
    assert all(r["verdict"] == "pass" for r in kept)
    said = next(line for line in lines if str(results) in line)
    assert f"{12 - len(kept)} of 12 records" in said, said


def test_a_report_past_the_limit_is_named_and_the_results_stay_whole(project):
    done = run_limited(project, 40_000)
    text = done.stdout + done.stderr
    assert done.returncode == OUTPUT_LOST, text
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    report = project / "reports" / "ctxeval.html"
    assert any(
        line.startswith("ctxeval: could not write") and str(report) in line and "report" in line
        for line in text.splitlines()
    ), text
    assert len(whole_records(project / "reports" / "results.jsonl")) == 12
    assert not report.exists()  # never half a report


def test_within_the_limit_the_run_is_unchanged(project):
    done = run_limited(project, 50_000_000)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(whole_records(project / "reports" / "results.jsonl")) == 12
