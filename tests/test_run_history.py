"""Every run keeps its results and report under reports/runs/<run_id>/, the
history is bounded by --ctx-keep-runs, and a run that selects a subset of the
items updates them in the latest results instead of replacing them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import CtxProject, read_jsonl

RECALL = """
    id: recall
    tags: [long_session]
    turns:
      - user: "For the record, the launch code is 4-4-2."
      - assistant: Noted.
      - user: "The staging database listens on port 5432."
      - assistant: Noted.
    probes:
      - {id: code, user: "What is the launch code?", expect: {contains: "4-4-2"}}
      - {id: port, user: "Which port does staging listen on?", expect: {contains: "5432"}}
"""
SHORT = """
    id: short
    turns:
      - user: "My locker is number 17."
      - assistant: Noted.
    probes:
      - {id: locker, user: "Which locker is mine?", expect: {contains: "17"}}
      - {id: again, user: "Say my locker number again.", expect: {contains: "17"}}
"""
STRATEGIES = "--ctx-strategy=full,sliding"


def run_folders(ctx: CtxProject) -> list[Path]:
    runs = ctx.path / "reports" / "runs"
    return sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []


def kept_results(folder: Path) -> list[dict[str, object]]:
    """A kept run's records: plain for the newest run, compressed for the others."""
    packed = folder / "results.jsonl.gz"
    if not packed.exists():
        return read_jsonl(folder / "results.jsonl")
    lines = gzip.decompress(packed.read_bytes()).decode("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_ids(records: list[dict[str, object]]) -> set[object]:
    return {r["run_id"] for r in records}


def two_scenarios(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    ctx.scenario("short", SHORT)


def test_each_run_keeps_its_results_and_report(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    two_scenarios(ctx)
    first = ctx.run(STRATEGIES, *xdist_args)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    second = ctx.run(STRATEGIES, *xdist_args)
    assert second.ret == pytest.ExitCode.OK
    folders = run_folders(ctx)
    # Once per run, under xdist too (only the controller writes it).
    assert len(folders) == 2
    latest = ctx.results()
    (latest_id,) = run_ids(latest)
    newest = ctx.path / "reports" / "runs" / latest_id
    assert newest in folders
    for folder in folders:
        kept = kept_results(folder)
        assert run_ids(kept) == {folder.name}
        assert len(kept) == 8
        assert "<html" in (folder / "ctxeval.html").read_text(encoding="utf-8")
        marker = json.loads((folder / "ctxeval-run.json").read_text(encoding="utf-8"))
        assert marker["run_id"] == folder.name
        assert marker["counts"]["items"] == 8
    # The latest report is the latest run's.
    assert (newest / "ctxeval.html").read_text(encoding="utf-8") == (
        ctx.path / "reports" / "ctxeval.html"
    ).read_text(encoding="utf-8")
    shown = [line for line in second.outlines if line.startswith("run history: ")]
    assert len(shown) == 1 and shown[0].endswith(f"runs/{latest_id}")
    # The newest run's results are the latest ones, plain; the older run's
    # are kept compressed, and only so.
    (older,) = [folder for folder in folders if folder != newest]
    assert sorted(p.name for p in newest.iterdir()) == [
        "ctxeval-run.json",
        "ctxeval.html",
        "results.jsonl",
    ]
    assert sorted(p.name for p in older.iterdir()) == [
        "ctxeval-run.json",
        "ctxeval.html",
        "results.jsonl.gz",
    ]


def test_the_newest_run_shares_its_files_and_a_later_run_leaves_them_as_they_were(
    ctx: CtxProject,
) -> None:
    # At LoCoMo size a results file is hundreds of MB: the history keeps the
    # latest one as a second name of the same file, and every later write
    # makes a new file, so a kept run never changes.
    two_scenarios(ctx)
    reports = ctx.path / "reports"
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    (first,) = run_folders(ctx)
    for name, kept in (("results.jsonl", "results.jsonl"), ("ctxeval.html", "ctxeval.html")):
        assert (reports / name).stat().st_ino == (first / kept).stat().st_ino
    results, report = ((first / name).read_bytes() for name in ("results.jsonl", "ctxeval.html"))
    # A partial rerun (merging the earlier items), then a full one.
    assert ctx.run(STRATEGIES, "-k", "short").ret == pytest.ExitCode.OK
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK
    # Kept as they were: the results compressed, byte for byte the same inside.
    assert (first / "ctxeval.html").read_bytes() == report
    assert gzip.decompress((first / "results.jsonl.gz").read_bytes()) == results
    assert not (first / "results.jsonl").exists()
    assert len(kept_results(first)) == 8
    # The earlier results' second name, kept for the merge, is gone again.
    assert sorted(p.name for p in reports.iterdir() if p.name.startswith(".results")) == []


def test_older_runs_keep_their_results_compressed_and_the_commands_read_them(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ctxeval.cli import main
    from pytest_ctxeval.results.store import load_results

    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    plain = (ctx.path / "reports" / "results.jsonl").read_bytes()
    (first_id,) = run_ids(ctx.results())
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    packed = ctx.path / "reports" / "runs" / first_id / "results.jsonl.gz"
    assert packed.stat().st_size < len(plain) / 3
    assert [r.model_dump(mode="json") for r in load_results(packed)] == [
        json.loads(line) for line in plain.decode("utf-8").splitlines()
    ]
    monkeypatch.chdir(ctx.path)
    capsys.readouterr()
    assert main(["compare", "previous", "latest"]) == 0
    assert "(0 got worse, 0 got better, 8 items)" in capsys.readouterr().out
    assert main(["report", str(packed), "-o", "old.html"]) == 0
    assert 'Items (<span id="item-count">8</span>)' in Path("old.html").read_text("utf-8")
    assert main(["merge", str(packed), "-o", "plain.jsonl"]) == 0
    assert Path("plain.jsonl").read_bytes() == plain


def test_a_rerun_merges_the_earlier_results_where_files_cannot_be_linked(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    def no_links(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # as some file systems refuse

    monkeypatch.setattr(os, "link", no_links)
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    (first_id,) = run_ids(ctx.results())
    assert ctx.run(STRATEGIES, "-k", "short").ret == pytest.ExitCode.OK
    records = ctx.results()
    assert len(records) == 8
    assert {r["run_id"] for r in records if r["scenario"] == "recall"} == {first_id}
    first = ctx.path / "reports" / "runs" / first_id
    assert len(kept_results(first)) == 8  # copied, and left whole


def test_a_killed_run_s_leftover_does_not_stand_for_the_earlier_results(ctx: CtxProject) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    (first_id,) = run_ids(ctx.results())
    leftover = ctx.path / "reports" / ".results.jsonl.before-this-run"
    leftover.write_text('{"not": "a record"}\n', encoding="utf-8")
    assert ctx.run(STRATEGIES, "-k", "short").ret == pytest.ExitCode.OK
    records = ctx.results()
    assert len(records) == 8
    assert {r["run_id"] for r in records if r["scenario"] == "recall"} == {first_id}
    assert not leftover.exists()


def test_the_history_keeps_the_newest_runs(ctx: CtxProject) -> None:
    ctx.scenario("short", SHORT)
    mine = ctx.path / "reports" / "runs" / "my-notes"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("not a run", encoding="utf-8")
    ids = []
    for _ in range(3):
        assert ctx.run("--ctx-strategy=full", "--ctx-keep-runs=2").ret == pytest.ExitCode.OK
        ids.append(ctx.results()[0]["run_id"])
    names = [p.name for p in run_folders(ctx)]
    assert sorted(names) == sorted([*ids[1:], "my-notes"])
    # The ini setting, and 0 keeps none (a folder the plugin did not write stays).
    ctx.ini(pythonpath=".", ctx_keep_runs="0")
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK
    assert [p.name for p in run_folders(ctx)] == ["my-notes"]
    assert (mine / "notes.txt").is_file()


def test_a_bad_keep_runs_value_is_a_usage_error(ctx: CtxProject) -> None:
    ctx.scenario("short", SHORT)
    result = ctx.run("--ctx-keep-runs=many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ctx-keep-runs: 'many'" in result.stderr.str()
    assert "0 keeps none" in result.stderr.str()


def test_a_marker_run_keeps_the_report_whole(ctx: CtxProject, xdist_args: tuple[str, ...]) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES, *xdist_args).ret == pytest.ExitCode.OK
    (first_id,) = run_ids(ctx.results())
    result = ctx.run(STRATEGIES, "-m", "long_session", *xdist_args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=4)  # (xdist's controller does not count the deselected)
    records = ctx.results()
    assert len(records) == 8
    by_scenario = {r["scenario"]: set() for r in records}
    for r in records:
        by_scenario[r["scenario"]].add(r["run_id"])
    (second_id,) = by_scenario["recall"]
    assert second_id != first_id
    # The items this run left alone keep the run they came from.
    assert by_scenario["short"] == {first_id}
    report = (ctx.path / "reports" / "ctxeval.html").read_text(encoding="utf-8")
    assert report.count(f"from run {first_id}") == 4
    assert 'Items (<span id="item-count">8</span>)' in report
    # The history keeps the whole picture too.
    assert len(read_jsonl(ctx.path / "reports" / "runs" / second_id / "results.jsonl")) == 8
    assert "4 items from earlier runs" in result.stdout.str()


def test_ctx_fresh_replaces_the_results(ctx: CtxProject) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    assert ctx.run(STRATEGIES, "-m", "long_session", "--ctx-fresh").ret == pytest.ExitCode.OK
    assert {r["scenario"] for r in ctx.results()} == {"recall"}
    assert len(ctx.results()) == 4
    ctx.ini(pythonpath=".", ctx_fresh="true")
    assert ctx.run(STRATEGIES, "-k", "short").ret == pytest.ExitCode.OK
    assert {r["scenario"] for r in ctx.results()} == {"short"}


def test_a_node_id_or_keyword_rerun_updates_only_its_items(ctx: CtxProject) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    first_run = {r["run_id"] for r in ctx.results()}
    nodeid = "scenarios/short.yaml::short::locker[full]"
    assert ctx.run(STRATEGIES, nodeid).ret == pytest.ExitCode.OK
    records = ctx.results()
    assert len(records) == 8
    # By run id, not by start time: two runs can start within the same second.
    rerun = [r for r in records if r["run_id"] not in first_run]
    assert [r["nodeid"] for r in rerun] == [nodeid]
    assert ctx.run(STRATEGIES, "-k", "sliding").ret == pytest.ExitCode.OK
    assert len(ctx.results()) == 8


def test_items_that_no_longer_exist_are_not_merged(ctx: CtxProject) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES).ret == pytest.ExitCode.OK
    # A probe removed from its file, a scenario file removed, a strategy no longer run.
    ctx.scenario(
        "recall",
        RECALL.replace(
            '      - {id: port, user: "Which port does staging listen on?", '
            'expect: {contains: "5432"}}\n',
            "",
        ),
    )
    (ctx.path / "scenarios" / "short.yaml").unlink()
    ctx.scenario("other", SHORT.replace("id: short", "id: other"))
    result = ctx.run("--ctx-strategy=full", "-k", "other")
    assert result.ret == pytest.ExitCode.OK
    kept = {(r["scenario"], r["strategy"], r["probe"]) for r in ctx.results()}
    assert kept == {
        ("other", "full", "locker"),
        ("other", "full", "again"),
        ("recall", "full", "code"),
    }


def test_another_model_s_results_are_not_merged(ctx: CtxProject) -> None:
    two_scenarios(ctx)
    assert ctx.run(STRATEGIES, "--ctx-model=ctxeval/echo").ret in (
        pytest.ExitCode.OK,
        pytest.ExitCode.TESTS_FAILED,
    )
    assert ctx.run(STRATEGIES, "-k", "short").ret == pytest.ExitCode.OK
    assert {r["scenario"] for r in ctx.results()} == {"short"}


ROLLOUT = """
    id: live
    mode: rollout
    system: You are a coding assistant.
    turns:
      - user: We are writing an HTTP client today.
      - assistant: Understood.
    constraints:
      - id: no-requests
        at_turn: 1
        text: "Never use the requests library; always use urllib3."
        check: {python: {forbid_imports: [requests], require_imports: [urllib3]}}
    rollout:
      user:
        - Write a function that downloads a URL.
    probes:
      - {id: last, user: "Write a function that downloads the status page."}
"""


def test_a_rollout_item_is_kept_while_its_scenario_is_there(ctx: CtxProject) -> None:
    # A rollout item is named "rollout", a probe the scenario file does not have.
    ctx.scenario("live", ROLLOUT)
    ctx.scenario("short", SHORT)
    assert ctx.run("--ctx-strategy=full", "--ctx-fail-on=never").ret == pytest.ExitCode.OK
    assert ctx.run("--ctx-strategy=full", "-k", "short").ret == pytest.ExitCode.OK
    assert ("live", "rollout") in {(r["scenario"], r["probe"]) for r in ctx.results()}


def test_the_history_keeps_every_record_even_when_the_results_file_lost_some(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from pytest_ctxeval.history.options import HistoryOptions
    from pytest_ctxeval.history.run import RunHistory
    from pytest_ctxeval.output_loss import RunOutputs
    from pytest_ctxeval.results.record import ResultRecord
    from pytest_ctxeval.results.run_info import RunInfo

    results = tmp_path / "reports" / "results.jsonl"
    results.parent.mkdir()
    fields = {"scenario": "s", "strategy": "full", "model": "m", "verdict": "pass"}
    records = [ResultRecord(**fields, probe=f"p{i}", classification="ok") for i in range(3)]
    run = SimpleNamespace(results=results, model="m", repeat=1, shard=None)

    def kept(run_id: str, lose_after: int | None) -> list[str]:
        outputs = RunOutputs(results)
        for number, record in enumerate(records):
            if number == lose_after:
                outputs._lose_results(OSError(27, "File too large"))  # as a full disk would
            outputs.write(record)
        outputs.close()
        history = RunHistory(HistoryOptions(), run, root=tmp_path)  # type: ignore[arg-type]
        info = RunInfo(plugin_version="0", git_commit=None, started_at="2026-12-02", run_id=run_id)
        history.keep(records, info, {}, outputs)
        assert history.saved is not None
        return [r["probe"] for r in read_jsonl(history.saved / "results.jsonl")]

    assert kept("whole", None) == ["p0", "p1", "p2"]  # the results file, copied
    assert (tmp_path / "reports/runs/whole/results.jsonl").read_bytes() == results.read_bytes()
    assert kept("torn", 1) == ["p0", "p1", "p2"]  # not the file: it holds p0 only
    assert [r["probe"] for r in read_jsonl(results)] == ["p0"]
    # The first run's history shared the results file's data; the second
    # run wrote a new file, so that history is whole.
    assert [r["probe"] for r in read_jsonl(tmp_path / "reports/runs/whole/results.jsonl")] == [
        "p0",
        "p1",
        "p2",
    ]
