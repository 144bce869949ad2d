"""``ctxeval init``: a fresh folder that ``pytest`` runs usefully at once."""

from __future__ import annotations

import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from conftest import read_jsonl

from pytest_ctxeval.scaffold import FILES

CTXEVAL = Path(sys.executable).parent / "ctxeval"
WORKFLOW = Path(__file__).parents[1] / "docs" / "github-actions" / "ctxeval.yml"

pytestmark = pytest.mark.usefixtures("_preloaded_modules")


def init(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CTXEVAL), "init", *args], cwd=where, capture_output=True, text=True, check=False
    )


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in root.rglob("*")
        if p.is_file()
    }


def test_init_then_pytest_runs_every_kind_of_scenario(pytester: pytest.Pytester) -> None:
    done = init(pytester.path)
    assert done.returncode == 0, done.stderr
    for relpath, _ in FILES:
        assert (pytester.path / relpath).is_file(), relpath
        assert f"created     {relpath}" in done.stdout
    assert "pytest --ctx-update-baseline" in done.stdout

    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    records = read_jsonl(pytester.path / "reports" / "results.jsonl")
    by_strategy: dict[str, list[dict[str, object]]] = {}
    for record in records:
        by_strategy.setdefault(str(record["strategy"]), []).append(record)
    # One scenario of each kind, every one passing with the whole context.
    assert {r["scenario"] for r in records} == {
        "needle-in-tool-output",
        "early-constraint",
        "followup-reference",
    }
    assert [r["verdict"] for r in by_strategy["full"]] == ["pass"] * 3, result.stdout.str()
    # A cheap strategy loses something: the run shows what the plugin is for.
    cheap = by_strategy["sliding"] + by_strategy["truncate"]
    assert any(r["classification"] == "context_loss" for r in cheap)
    # The project's own strategy, from strategies/, ran on every scenario.
    assert len(by_strategy["pinned-window"]) == 3
    assert all(r["verdict"] != "error" for r in records)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the losses fail the run


def test_init_twice_changes_nothing_and_says_so(pytester: pytest.Pytester) -> None:
    assert init(pytester.path).returncode == 0
    (pytester.path / "pytest.ini").write_text("[pytest]\n# mine\n", encoding="utf-8")
    before = snapshot(pytester.path)
    again = init(pytester.path)
    assert again.returncode == 0
    assert snapshot(pytester.path) == before
    assert "skipped     pytest.ini  (exists; --force overwrites it)" in again.stdout
    assert "nothing written" in again.stdout
    forced = init(pytester.path, "--force")
    assert "overwritten pytest.ini" in forced.stdout
    assert "ctx_strategy" in (pytester.path / "pytest.ini").read_text(encoding="utf-8")


def test_init_leaves_the_settings_in_pyproject_alone(pytester: pytest.Pytester) -> None:
    pyproject = "[tool.pytest.ini_options]\naddopts = '-q'\n"
    (pytester.path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    done = init(pytester.path, "--force")
    assert not (pytester.path / "pytest.ini").exists()
    assert (pytester.path / "pyproject.toml").read_text(encoding="utf-8") == pyproject
    assert "pyproject.toml has [tool.pytest.ini_options]" in done.stdout
    assert 'ctx_strategy = "full,sliding,truncate,pinned_window:PinnedWindowStrategy"' in (
        done.stdout
    )


def test_init_into_a_named_folder_and_not_into_a_file(tmp_path: Path) -> None:
    done = init(tmp_path, "new-project")
    assert done.returncode == 0
    assert (tmp_path / "new-project" / "scenarios" / "early-constraint.yaml").is_file()
    assert "cd new-project && pytest --ctx-update-baseline" in done.stdout
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    refused = init(tmp_path, "a-file")
    assert refused.returncode == 2
    assert refused.stderr.strip() == "ctxeval init: 'a-file' is not a directory; expected a folder"


def test_the_templates_are_package_data_and_the_workflow_is_the_documented_one() -> None:
    package = files("pytest_ctxeval.scaffold")
    for _, name in FILES:
        assert package.joinpath(name).is_file(), name
    # The project runs its documented workflow (test_ci_workflow); init ships that text.
    shipped = package.joinpath("ctxeval.yml").read_text(encoding="utf-8")
    assert shipped == WORKFLOW.read_text(encoding="utf-8")
