"""Warnings about scenarios that load but may not do what their author meant:
one scenario id in two files, a probe scored by agreement alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CtxProject, output

from pytest_ctxeval.cli import main

SCENARIO = """
id: {id}
turns:
  - user: The staging database listens on port 5433.
  - assistant: Noted.
probes:
  - {{id: port, user: "Which port?", expect: {{contains: "5433"}}}}
"""

NO_EXPECT = """
id: open-question
turns:
  - user: We chose the blue theme for the dashboard.
  - assistant: Noted.
probes:
  - {id: port, user: "Which port?", expect: {contains: "5433"}}
  - id: theme
    user: Which theme did we choose?
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["no-xdist", "xdist"])
def test_a_scenario_id_in_two_files_warns_naming_both(
    ctx: CtxProject, workers: tuple[str, ...]
) -> None:
    ctx.scenario("staging", SCENARIO.format(id="staging-port"))
    ctx.scenario("copy/staging-again", SCENARIO.format(id="staging-port"))
    ctx.scenario("other", SCENARIO.format(id="other-port"))
    result = ctx.run("--collect-only", *workers)
    text = output(result)
    assert "scenario id 'staging-port' is used in two files" in text, text
    assert "scenarios/staging.yaml" in text and "scenarios/copy/staging-again.yaml" in text
    assert "'other-port'" not in text


def test_validate_warns_of_a_scenario_id_in_two_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text(SCENARIO.format(id="staging-port"), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(SCENARIO.format(id="staging-port"), encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    twice = "warning: scenario id 'staging-port' is used in two files"
    assert f"{tmp_path / 'b.yaml'}:1:1: {twice}" in err
    assert str(tmp_path / "a.yaml") in err


def test_validate_flags_a_probe_without_expect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "open.yaml"
    path.write_text(NO_EXPECT.lstrip("\n"), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert (
        f"{path}:7:5: note: probe 'theme' of 'open-question' has no expect: "
        "scored by agreement with the full-context answer"
    ) in err
    assert "'port'" not in err  # it has an expectation
    assert f"{path}: ok (1 scenario, 1 note)" in out
