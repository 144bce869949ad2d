"""Installed in a project that does not use it, the plugin stays out of the way:
YAML data in a ``scenarios/`` folder is left alone, nothing is written, and
start-up resolves no strategy.  Where a project does use it, its settings are
still checked before anything runs."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest
from conftest import CtxProject, assert_no_traceback, item_ids, output

# YAML a project might keep in scenarios/ for reasons of its own.
DATA_FILES = {
    "checkout.yaml": "name: checkout\nsteps:\n  - open cart\n  - pay\n",
    "weights.yaml": "- {name: a, weight: 1}\n- {name: b, weight: 2}\n",
    "load.yml": "scenarios:\n  - name: smoke\n    users: 10\n",
    "template.yaml": "replicas: {{ .Values.replicas }}\nimage: {{ .Values.image }}\n",
    "empty.yaml": "",
    # Read with the scenario loader they fail (a tab after a colon, a second
    # document, an include that leaves the folder): still data, left alone.
    "tabbed.yaml": "name:\tcheckout\nsteps: [open]\n",
    "two-docs.yaml": "name: a\n---\nname: b\n",
    "outside.yaml": "defaults: !include ../settings.yaml\n",
}

SCENARIO = """
    id: {id}
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
    probes:
      - {{id: launch-code, user: "What is the launch code?", expect: {{contains: "ZEBRA-42"}}}}
"""

PASSING_TEST = "def test_one():\n    assert True\n"


def scenario(id: str) -> str:
    return SCENARIO.format(id=id)


def has_ctxeval_section(result: pytest.RunResult) -> bool:
    return re.search(r"^=+ ctxeval =+$", result.stdout.str(), re.M) is not None


def indented(lines: list[str], by: int) -> str:
    return "".join(" " * by + line + "\n" for line in lines)


def write_data_files(ctx: CtxProject) -> None:
    for name, text in DATA_FILES.items():
        ctx.write(f"scenarios/{name}", text)


# -- YAML that is not a scenario ----------------------------------------------------------


def test_yaml_data_in_a_default_scenarios_folder_is_left_alone(ctx, xdist_args):
    write_data_files(ctx)
    ctx.write("test_x.py", PASSING_TEST)
    result = ctx.run(*xdist_args)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert not has_ctxeval_section(result)
    assert not (ctx.path / "reports").exists()


def test_scenario_files_in_the_default_folder_are_still_collected(ctx):
    write_data_files(ctx)
    ctx.scenario("single", scenario("single"))
    lines = textwrap.dedent(scenario("listed")).strip().splitlines()
    ctx.write("scenarios/listed.yaml", "scenarios:\n  -\n" + indented(lines, 4))
    ctx.write("scenarios/top-list.yaml", "-\n" + indented(lines, 2))
    ctx.write("scenarios/_parts/included.yaml", scenario("included"))
    ctx.write("scenarios/includes.yaml", "scenarios:\n  - !include _parts/included.yaml\n")
    assert ctx.collect_ids("--ctx-strategy=full") == [
        "scenarios/includes.yaml::included::launch-code[full]",
        "scenarios/listed.yaml::listed::launch-code[full]",
        "scenarios/single.yaml::single::launch-code[full]",
        "scenarios/top-list.yaml::listed::launch-code[full]",
    ]


def test_a_broken_scenario_in_the_default_folder_still_shows_its_error(ctx):
    ctx.scenario("broken", "id: broken\ndescription: one: two\nprobes:\n  - {id: p, user: q}\n")
    result = ctx.run("--ctx-strategy=full")
    text = output(result)
    assert "ERROR collecting scenarios/broken.yaml" in text
    assert "scenarios/broken.yaml:2:" in text
    assert_no_traceback(result)


def test_with_scenario_dirs_in_the_ini_every_yaml_there_is_a_scenario(ctx):
    ctx.ini(pythonpath=".", ctx_scenario_dirs="scenarios")
    ctx.write("scenarios/checkout.yaml", DATA_FILES["checkout.yaml"])
    result = ctx.run("--ctx-strategy=full")
    text = output(result)
    assert "ERROR collecting scenarios/checkout.yaml" in text
    assert "scenarios/checkout.yaml:1:1: unknown key 'name' in scenario" in text
    assert_no_traceback(result)


def test_a_yaml_file_named_on_the_command_line_is_a_scenario(ctx):
    ctx.write("scenarios/checkout.yaml", DATA_FILES["checkout.yaml"])
    result = ctx.run("scenarios/checkout.yaml", "--ctx-strategy=full")
    text = output(result)
    assert "scenarios/checkout.yaml:1:1: unknown key 'name' in scenario" in text
    assert result.ret != pytest.ExitCode.OK


# -- nothing written when no ctxeval item runs -----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("test_x.py",), id="only-python-tests-named"),
        pytest.param(("-k", "test_one"), id="probes-deselected"),
        pytest.param(("--collect-only",), id="collect-only"),
    ],
)
def test_no_report_or_results_when_no_ctxeval_item_runs(ctx, xdist_args, args):
    ctx.scenario("recall", scenario("recall"))
    ctx.write("test_x.py", PASSING_TEST)
    result = ctx.run("--ctx-strategy=full", *args, *xdist_args)
    assert result.ret == pytest.ExitCode.OK
    assert not (ctx.path / "reports").exists()
    assert not has_ctxeval_section(result)


def test_an_unusable_default_output_path_does_not_bother_a_project_without_scenarios(ctx):
    """``reports`` is a file here, so the default results path cannot be
    written; a project whose YAML is no scenario never finds out."""
    ctx.write("reports", "quarterly numbers\n")
    write_data_files(ctx)
    ctx.write("test_x.py", PASSING_TEST)
    result = ctx.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK


# -- start-up cost ---------------------------------------------------------------------

# Runs pytest in a fresh interpreter (an in-process run would see the modules
# the test session already imported) and prints the heavy modules it loaded.
# Other installed pytest plugins are blocked: what they import is theirs (the
# langchain extra brings langsmith's, which imports pydantic).
IMPORTED_AFTER_A_RUN = """
import json, sys
from importlib.metadata import entry_points
import pytest
ours = ("pytest-ctxeval", "pytest-xdist")
others = [e.name for e in entry_points(group="pytest11") if e.dist.name not in ours]
blocked = [arg for name in others for arg in ("-p", "no:" + name)]
code = pytest.main(["-q", "-p", "no:cacheprovider", *blocked, *sys.argv[1:]])
heavy = ["pytest_ctxeval.strategies.registry", "pytest_ctxeval.llm.providers", "litellm",
         "pandas", "pydantic", "pytest_ctxeval.report.html"]
print(json.dumps({"exit": int(code), "loaded": [m for m in heavy if m in sys.modules]}))
"""


def imported_after_a_run(ctx: CtxProject, *args: str) -> tuple[int, list[str]]:
    """pytest's exit code, and which heavy modules the run loaded."""
    script = ctx.write("imported_after_a_run.py", IMPORTED_AFTER_A_RUN)
    result = ctx.pytester.run(sys.executable, str(script), *args)
    seen = json.loads(result.outlines[-1])
    return seen["exit"], seen["loaded"]


def test_a_run_without_scenarios_loads_no_strategy_or_model_code(ctx):
    write_data_files(ctx)
    ctx.write("test_x.py", PASSING_TEST)
    # A strategy named on the command line is not resolved either: nothing uses it.
    assert imported_after_a_run(ctx, "--ctx-strategy=headtail", "test_x.py") == (0, [])


def test_a_run_without_scenarios_under_xdist_loads_no_report_code(ctx):
    """The controller of ``-n 2`` loads the report's libraries only once a
    worker has collected a scenario: a project of ordinary tests pays nothing."""
    write_data_files(ctx)
    ctx.write("test_x.py", PASSING_TEST)
    assert imported_after_a_run(ctx, "-n", "2", "test_x.py") == (0, [])


def test_a_run_with_scenarios_under_xdist_loads_the_report_code(ctx):
    ctx.scenario("recall", scenario("recall"))
    exit_code, loaded = imported_after_a_run(ctx, "--ctx-strategy=full", "-n", "2")
    assert exit_code == 0
    assert "pytest_ctxeval.report.html" in loaded


def test_a_run_with_scenarios_loads_the_strategies(ctx):
    """The other side of the test above: the check sees imports when they happen."""
    ctx.scenario("recall", scenario("recall"))
    exit_code, loaded = imported_after_a_run(ctx, "--ctx-strategy=full", "--collect-only")
    assert exit_code == 0
    assert "pytest_ctxeval.strategies.registry" in loaded


# -- settings are still checked where scenarios are collected ----------------------------


def test_a_bad_strategy_is_a_usage_error_in_every_mode(ctx, xdist_args):
    ctx.scenario("recall", scenario("recall"))
    result = ctx.run("--ctx-strategy=headtail,slidnig", *xdist_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "--ctx-strategy: unknown strategy 'slidnig'" in text
    assert "ERROR collecting" not in text
    assert_no_traceback(result)
    assert not (ctx.path / "reports").exists()


def test_an_unknown_model_is_a_usage_error_in_every_mode(ctx, xdist_args):
    ctx.scenario("recall", scenario("recall"))
    result = ctx.run("--ctx-model=ctxeval/nope", *xdist_args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ctx-model: unknown mock model 'ctxeval/nope'" in output(result)
    assert_no_traceback(result)


def test_a_bad_strategy_is_reported_with_collect_only(ctx):
    ctx.scenario("recall", scenario("recall"))
    result = ctx.run("--collect-only", "-q", "--ctx-strategy=slidnig")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert item_ids(result) == []


# -- a folder named on the command line ---------------------------------------------------

NAMED_FOLDER_SCENARIO = """
id: imported-chat
turns:
  - user: "The code is ZEBRA-42."
  - assistant: Noted.
probes:
  - {id: code, user: "What is the code?", expect: {contains: "ZEBRA-42"}}
"""


def test_a_folder_named_on_the_command_line_is_collected(ctx, xdist_args):
    ctx.write("imported/chat.yaml", NAMED_FOLDER_SCENARIO)
    ctx.write("imported/settings.yaml", "colour: blue\nsizes: [1, 2]\n")  # data, not a scenario
    ctx.write("imported/_parts/piece.yaml", NAMED_FOLDER_SCENARIO)  # a fragment folder
    result = ctx.run("imported", "--ctx-strategy=full", *xdist_args)
    result.assert_outcomes(passed=1)
    assert [r["nodeid"] for r in ctx.results()] == ["imported/chat.yaml::imported-chat::code[full]"]


def test_a_bare_run_does_not_sweep_the_project_for_scenarios(ctx):
    ctx.write("imported/chat.yaml", NAMED_FOLDER_SCENARIO)
    ctx.write("test_x.py", PASSING_TEST)
    result = ctx.run("--ctx-strategy=full")
    result.assert_outcomes(passed=1)  # test_x only
    assert not (ctx.path / "reports").exists()
