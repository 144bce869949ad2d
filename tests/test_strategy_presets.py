"""Presets that ship with the package, a project's own presets, strategies with
parameters on the command line, and what the package ships."""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_no_traceback, by_key, output

from pytest_ctxeval.strategies.names import split_names
from pytest_ctxeval.strategies.params import StrategyParamError
from pytest_ctxeval.strategies.presets import SHIPPED_PRESET_DIR, PresetFactory
from pytest_ctxeval.strategies.registry import UnknownStrategyError, available, resolve

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "pytest_ctxeval"

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 8, seed: 1}
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""

# headtail cut to 5 characters a side loses the launch code; the default keeps it.
TINY_HEADTAIL = "name: headtail-200\nkind: headtail\nparams: {head: 5, tail: 5}\n"


def classifications(records: list[dict[str, Any]]) -> dict[str, str]:
    return {strategy: r["classification"] for (_, strategy, _), r in by_key(records).items()}


# --- shipped presets ------------------------------------------------------------------


def test_a_shipped_preset_runs_in_a_project_without_a_strategies_folder(ctx) -> None:
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=headtail-200")
    result.assert_outcomes(passed=1)
    assert not (ctx.path / "strategies").exists()
    assert classifications(ctx.results()) == {"headtail-200": "ok"}


def test_every_shipped_preset_loads_and_builds() -> None:
    files = sorted(SHIPPED_PRESET_DIR.glob("*.yaml"))
    shipped = {
        name: f for name, f in available(preset_dirs=[]).items() if isinstance(f, PresetFactory)
    }
    assert sorted(f.path for f in shipped.values()) == files
    assert {"headtail-200", "sliding-8", "summarize-aggressive", "truncate-tokens-2000"} <= set(
        shipped
    )
    for preset in shipped.values():
        assert preset.replaces is None and preset.description
        assert preset().params()  # type: ignore[attr-defined]


def test_a_projects_preset_replaces_the_shipped_one_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "headtail-200.yaml").write_text(TINY_HEADTAIL, encoding="utf-8")
    replaced = available(preset_dirs=[tmp_path])["headtail-200"]
    assert isinstance(replaced, PresetFactory)
    assert replaced.replaces == SHIPPED_PRESET_DIR / "headtail-200.yaml"
    assert replaced.description == "headtail preset (replaces the shipped preset)"
    (spec,) = resolve("headtail-200", preset_dirs=[tmp_path])
    assert spec.params == {"head": 5, "tail": 5}
    (spec,) = resolve("headtail-200", preset_dirs=[])
    assert spec.params == {"head": 200, "tail": 200}


def test_the_projects_preset_is_the_one_that_runs(ctx) -> None:
    ctx.write("strategies/tiny.yaml", TINY_HEADTAIL)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=headtail-200,headtail")
    result.assert_outcomes(passed=1, failed=1)
    assert classifications(ctx.results()) == {"headtail-200": "context_loss", "headtail": "ok"}


# --- parameters on the command line -------------------------------------------------------


def test_parameters_on_the_command_line_build_that_strategy(ctx) -> None:
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=headtail(head=5,tail=5),headtail")
    result.assert_outcomes(passed=1, failed=1)
    assert classifications(ctx.results()) == {
        "headtail[head:5+tail:5]": "context_loss",
        "headtail": "ok",
    }


def test_a_parametrised_strategy_is_selected_by_k_by_node_id_and_by_its_shown_name(ctx) -> None:
    ctx.scenario("recall", SCENARIO)
    both = "--ctx-strategy=headtail(head=5,tail=5),headtail(head=50, tail=50)"
    small = "scenarios/recall.yaml::recall::launch-code[headtail[head:5+tail:5]]"
    assert ctx.collect_ids(both) == [
        small,
        "scenarios/recall.yaml::recall::launch-code[headtail[head:50+tail:50]]",
    ]
    assert ctx.collect_ids(both, "-k", "headtail[head:5+tail:5]") == [small]
    assert ctx.collect_ids(both, small) == [small]
    # The shown name is accepted back on the command line, for the same item.
    assert ctx.collect_ids("--ctx-strategy=headtail[head:5+tail:5]") == [small]


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (
            "headtail(hed=5)",
            "--ctx-strategy: strategy 'headtail' has no parameter 'hed' (did you mean 'head'?); "
            "it accepts: head, tail, max_listed",
        ),
        (
            "headtail(head=-1)",
            "--ctx-strategy: strategy 'headtail' rejects head=-1: "
            "headtail: head must be >= 0, got -1",
        ),
        (
            "sliding(turns=many)",
            "--ctx-strategy: strategy 'sliding' rejects turns='many': turns takes int",
        ),
        (
            "sliding-8(turn=3)",
            "--ctx-strategy: preset 'sliding-8' has no parameter 'turn' (did you mean 'turns'?)",
        ),
        ("full,headtial", "--ctx-strategy: unknown strategy 'headtial' (did you mean 'headtail'"),
        ("headtail(head=5", "--ctx-strategy: 'headtail(head=5': ')' is missing"),
        ("all(head=5)", "--ctx-strategy: 'all(head=5)': 'all' takes no parameters"),
    ],
)
def test_a_bad_strategy_or_parameter_is_one_usage_error(ctx, strategy: str, message: str) -> None:
    ctx.scenario("recall", SCENARIO)
    result = ctx.run(f"--ctx-strategy={strategy}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in output(result)
    assert_no_traceback(result)


def test_a_comma_list_splits_outside_parentheses_brackets_and_quotes() -> None:
    assert split_names("headtail(head=50,tail=50), sliding,x[a:1+b:2],y(s='p,q')") == [
        "headtail(head=50,tail=50)",
        "sliding",
        "x[a:1+b:2]",
        "y(s='p,q')",
    ]
    (spec,) = resolve("cache-hostile(inner=sliding,inner_params={turns: 2})", preset_dirs=[])
    assert spec.params == {"inner": "sliding", "inner_params": {"turns": 2}}


def test_values_are_read_as_yaml_then_as_the_parameter_type() -> None:
    specs = resolve(
        "truncate(unit=tokens,max_tokens=100),sliding(keep_system=false),rag(embedding_model=7)",
        preset_dirs=[],
    )
    assert [(s.name, s.params) for s in specs] == [
        ("truncate[unit:tokens+max_tokens:100]", {"unit": "tokens", "max_tokens": 100}),
        ("sliding[keep_system:false]", {"keep_system": False}),
        # A string parameter given something YAML reads as a number gets the text.
        ('rag[embedding_model:"7"]', {"embedding_model": "7"}),
    ]


def test_the_same_parameters_in_another_order_are_one_strategy() -> None:
    specs = resolve(
        "headtail(tail=5,head=5),headtail(head=5, tail=5),headtail[head:5+tail:5]",
        preset_dirs=[],
    )
    assert [(s.name, s.params) for s in specs] == [
        ("headtail[head:5+tail:5]", {"head": 5, "tail": 5})
    ]


def test_a_preset_takes_parameters_over_its_own() -> None:
    (spec,) = resolve("headtail-200(tail=50)", preset_dirs=[])
    assert spec.name == "headtail-200[tail:50]"
    assert spec.params == {"head": 200, "tail": 50}
    assert spec.create().params() == {"head": 200, "tail": 50, "max_listed": 40}  # type: ignore[attr-defined]


def test_parameter_errors_are_strategy_name_errors() -> None:
    with pytest.raises(StrategyParamError) as info:
        resolve("headtail(max_list=3)", preset_dirs=[])
    assert isinstance(info.value, UnknownStrategyError)  # the plugin reports it as a usage error
    assert "(did you mean 'max_listed'?)" in str(info.value)


# --- what the package ships -------------------------------------------------------------


def pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_every_data_file_in_the_package_is_listed_as_package_data() -> None:
    patterns = pyproject()["tool"]["setuptools"]["package-data"]["pytest_ctxeval"]
    data = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    ]
    assert "strategies/shipped_presets/headtail-200.yaml" in data
    missing = [f for f in data if not any(fnmatch.fnmatch(f, p) for p in patterns)]
    assert missing == [], "not in the wheel: add them to [tool.setuptools.package-data]"


def imported_top_level_names(folder: Path) -> set[str]:
    """Top-level modules the files in ``folder`` import, ``pytest.importorskip`` included."""
    names: set[str] = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(str(node.args[0].value))
    return {name.partition(".")[0] for name in names}


def requirement_name(requirement: str) -> str:
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_test_extra_is_what_the_tests_import_beyond_the_dependencies() -> None:
    project = pyproject()["project"]
    tests = Path(__file__).parent
    local = {p.stem for p in tests.glob("*.py")} | {"pytest_ctxeval"}
    modules = imported_top_level_names(tests) - set(sys.stdlib_module_names) - local
    distributions = packages_distributions()
    # A namespace (opentelemetry) maps to every distribution installed under it.
    wanted = [{requirement_name(d) for d in distributions.get(m, [m])} for m in modules]
    needed = set().union(*wanted)
    main = {requirement_name(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    # The adapters' tests call their libraries directly: those come with the
    # adapters' own extras, which the README's test command installs too; so
    # do the instrumentations the trace fixtures are made with (`traces`).
    kinds = ("langchain", "openai-agents", "inspect")
    adapters = {requirement_name(r) for e in kinds for r in extras[e]}
    assert adapters <= needed
    traces = {requirement_name(r) for r in extras["traces"]}
    test = {requirement_name(r) for r in extras["test"]}
    beyond = [dists for dists in wanted if not dists & (main | adapters | traces)]
    # Whatever else the tests import comes from the test extra, and the test
    # extra holds nothing the tests do not import.
    assert all(dists & test for dists in beyond), beyond
    assert test == set().union(*beyond) & test
    # Lint and type-check tools are for development, not for running the tests.
    assert {"ruff", "mypy", "types-pyyaml", "pandas-stubs"} <= {
        requirement_name(r) for r in extras["dev"]
    }


def test_the_license_is_mit_and_ships_as_its_file() -> None:
    project = pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 The pytest-ctxeval authors\n")
    # The SPDX field replaces the license classifier; setuptools rejects both.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    versions = [c.rsplit(" ", 1)[1] for c in project["classifiers"] if re.search(r"3\.\d+$", c)]
    assert versions == ["3.10", "3.11", "3.12", "3.13"]
    assert project["requires-python"] == ">=3.10"
