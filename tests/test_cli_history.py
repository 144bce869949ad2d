"""``ctxeval runs``, ``ctxeval compare`` and ``ctxeval view`` over the run
history pytest keeps."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import CtxProject

from pytest_ctxeval.cli import main
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.store import write_results

SHORT = """
    id: short
    turns:
      - user: "My locker is number 17."
      - assistant: Noted.
    probes:
      - {id: locker, user: "Which locker is mine?", expect: {contains: "17"}}
"""
# The console script, run by the interpreter running the tests.
CTXEVAL = "import sys; from pytest_ctxeval.cli import main; sys.exit(main(sys.argv[1:]))"


def record(probe: str, classification: str, verdict: str, **extra: object) -> ResultRecord:
    fields: dict[str, object] = {
        "scenario": "s",
        "scenario_file": "scenarios/s.yaml",
        "strategy": "sliding",
        "model": "ctxeval/oracle",
        "probe": probe,
        "verdict": verdict,
        "classification": classification,
        "ground_truth_verdict": "pass",
        "answer": f"answer to {probe}",
        "prompt_tokens": 100,
        "cost_usd": 0.001,
    }
    fields.update(extra)
    return ResultRecord.model_validate(fields)


def two_results(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_results(
        a,
        [
            record("falls", "ok", "pass", answer="The port is 5432."),
            record("rises", "context_loss", "fail"),
            record("stays", "ok", "pass"),
            record("dropped", "ok", "pass"),
        ],
    )
    write_results(
        b,
        [
            record("falls", "context_loss", "fail", answer="I could not find that."),
            record("rises", "ok", "pass"),
            record("stays", "ok", "pass", prompt_tokens=80),
            record("added", "ok", "pass"),
        ],
    )
    return a, b


def test_runs_lists_the_kept_runs(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx.scenario("short", SHORT)
    for _ in range(2):
        assert ctx.run("--ctx-strategy=full,sliding").ret == pytest.ExitCode.OK
    capsys.readouterr()
    monkeypatch.chdir(ctx.path)
    assert main(["runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["run", "id"]
    assert len(lines) == 3
    run_id = ctx.results()[0]["run_id"]
    assert lines[-1].startswith(run_id)
    # model, pass / fail / error, items, strategies
    assert lines[-1].split()[-6:] == ["ctxeval/oracle", "2", "0", "0", "2", "full,sliding"]


def test_runs_without_history_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--reports", str(tmp_path)]) == 0
    assert "no runs kept under" in capsys.readouterr().out


def test_compare_sets_two_runs_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = two_results(tmp_path)
    out = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "-o", str(out)]) == 0
    assert "1 got worse, 1 got better" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    worse = page[page.index('id="worse"') : page.index('id="better"')]
    # The item whose verdict fell, with both runs' outcomes and answers.
    assert "falls" in worse and "rises" not in worse
    assert "The port is 5432." in worse and "I could not find that." in worse
    assert ">ok<" in worse and ">context_loss<" in worse
    better = page[page.index('id="better"') : page.index('id="all"')]
    assert "rises" in better
    everything = page[page.index('id="all"') :]
    for probe in ("falls", "rises", "stays", "dropped", "added"):
        assert probe in everything
    assert ">new<" in everything and ">gone<" in everything
    assert "<script" not in page and "http" not in page.split("<main>")[1]


def test_compare_decides_as_the_gate_does(tmp_path: Path) -> None:
    # A model miss after a pass is the model's, not the strategy's: not worse.
    from pytest_ctxeval.history.compare import Side, compare_runs

    before = [record("p", "ok", "pass")]
    after = [record("p", "model_miss", "fail", ground_truth_verdict="fail")]
    result = compare_runs(Side("a", before), Side("b", after))
    assert [row.change for row in result.rows] == ["note"]
    assert result.rows[0].symbol == "M"


def test_compare_escapes_answers(tmp_path: Path) -> None:
    a, b = two_results(tmp_path)
    write_results(b, [record("falls", "context_loss", "fail", answer="<script>alert(1)</script>")])
    out = tmp_path / "cmp.html"
    assert main(["compare", str(a), str(b), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def test_compare_accepts_latest_and_previous(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx.scenario("short", SHORT)
    monkeypatch.chdir(ctx.path)
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK
    capsys.readouterr()
    assert main(["compare", "previous", "latest"]) == 1
    assert "'previous': " in capsys.readouterr().err
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK
    capsys.readouterr()
    assert main(["compare", "previous", "latest"]) == 0
    written = capsys.readouterr().out
    assert written.startswith("compare: reports/compare-") and "0 got worse" in written
    assert len(list((ctx.path / "reports").glob("compare-*.html"))) == 1


def test_compare_names_a_run_it_cannot_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", "nope", "latest", "--reports", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "'nope' is no run id" in err and "expected latest, previous" in err


def test_view_serves_the_report_on_loopback(tmp_path: Path) -> None:
    report = tmp_path / "ctxeval.html"
    report.write_text("<!DOCTYPE html><title>the report</title>", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", CTXEVAL, "view", "--serve", "--no-open"]
        + ["--reports", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # waits for the server to say where it is
        assert line.startswith(f"serving {tmp_path.resolve()} at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].strip()
        assert url.endswith("/ctxeval.html")
        with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback
            assert "<title>the report</title>" in answer.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_view_without_a_browser_serves_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.history import serve

    served: list[Path] = []
    (tmp_path / "ctxeval.html").write_text("<html></html>", encoding="utf-8")
    monkeypatch.setattr(serve, "has_browser", lambda: False)
    monkeypatch.setattr(serve, "serve", lambda report, open_browser: served.append(report) or 0)
    assert main(["view", "--reports", str(tmp_path)]) == 0
    assert served == [tmp_path / "ctxeval.html"]


def test_view_opens_a_kept_run_s_report(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ctxeval.history import serve

    ctx.scenario("short", SHORT)
    monkeypatch.chdir(ctx.path)
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK
    run_id = ctx.results()[0]["run_id"]
    opened: list[Path] = []
    monkeypatch.setattr(serve, "open_report", lambda report: opened.append(report) or True)
    assert main(["view", run_id]) == 0
    assert opened == [Path("reports") / "runs" / run_id / "ctxeval.html"]
    capsys.readouterr()
    assert main(["view", "no-such-run"]) == 1
    assert "'no-such-run' is no run id" in capsys.readouterr().err


def test_view_without_a_report_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", "--reports", str(tmp_path)]) == 1
    assert "run pytest first" in capsys.readouterr().err
