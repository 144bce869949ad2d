"""Which YAML becomes which test items, and how the options shape collection."""

from __future__ import annotations

import pytest
from conftest import BUILTIN_STRATEGIES, assert_no_traceback, by_key, item_ids, output

FOUR_OPTION = "--ctx-strategy=" + ",".join(BUILTIN_STRATEGIES)

# Two scenarios in one file (``scenarios:`` form); probes deliberately not in
# alphabetical order, so "file order" and "sorted" are told apart.
TWO_SCENARIOS = """
    scenarios:
      - id: zulu
        turns:
          - user: "The launch code is ZEBRA-42."
          - assistant: Noted.
        probes:
          - {id: second, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
          - {id: first, user: "What is the launch code?"}
      - id: alpha
        turns:
          - user: "My cat is called Miso."
        probes:
          - {id: cat, user: "What is my cat called?", expect: {contains: Miso}}
"""

ONE_SCENARIO = """
    id: {id}
    tags: {tags}
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
      - generate: {{kind: chitchat, turns: 8, seed: 1}}
    probes:
      - {{id: launch-code, user: "What is the launch code?", expect: {{contains: "ZEBRA-42"}}}}
"""


def one_scenario(id: str = "recall", tags: str = "[]") -> str:
    return ONE_SCENARIO.format(id=id, tags=tags)


def expected_ids(strategies: tuple[str, ...] = BUILTIN_STRATEGIES) -> list[str]:
    """File order for scenarios and probes; strategies in the order they were named."""
    ids = []
    for scenario, probes in (("zulu", ["second", "first"]), ("alpha", ["cat"])):
        for probe in probes:
            for strategy in strategies:
                ids.append(f"scenarios/pair.yaml::{scenario}::{probe}[{strategy}]")
    return ids


# -- item ids and order ---------------------------------------------------------------


def test_one_item_per_scenario_strategy_and_probe(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ids = ctx.collect_ids(FOUR_OPTION)
    assert ids == expected_ids()
    assert len(ids) == 3 * len(BUILTIN_STRATEGIES)


def test_collection_order_is_the_same_on_every_run(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ctx.scenario("other", one_scenario())
    first = ctx.collect_ids(FOUR_OPTION)
    assert first == ctx.collect_ids(FOUR_OPTION)
    # Files in path order: other.yaml before pair.yaml.
    assert first[: len(BUILTIN_STRATEGIES)] == [
        f"scenarios/other.yaml::recall::launch-code[{s}]" for s in BUILTIN_STRATEGIES
    ]
    assert first[len(BUILTIN_STRATEGIES) :] == expected_ids()


# -- --ctx-strategy -------------------------------------------------------------------


def test_strategy_option_restricts_and_keeps_the_given_order(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    assert ctx.collect_ids("--ctx-strategy=sliding,headtail") == expected_ids(
        ("sliding", "headtail")
    )


def strategies_in(ids: list[str]) -> list[str]:
    """The strategy names in item ids, in order of first appearance."""
    names = [i.split("[", 1)[1].split("]", 1)[0] for i in ids]
    return list(dict.fromkeys(names))


def test_all_means_every_builtin_strategy_and_is_the_default(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ids = ctx.collect_ids("--ctx-strategy=all")
    names = strategies_in(ids)
    assert set(BUILTIN_STRATEGIES) <= set(names)
    assert names == sorted(names)
    assert len(ids) == 3 * len(names)
    assert ctx.collect_ids() == ids
    # Naming a strategy twice (here through "all") does not duplicate items.
    assert ctx.collect_ids("--ctx-strategy=all,full") == ids


def test_strategy_from_ini_and_the_option_wins(ctx):
    ctx.ini(ctx_strategy="truncate")
    ctx.scenario("pair", TWO_SCENARIOS)
    assert ctx.collect_ids() == expected_ids(("truncate",))
    assert ctx.collect_ids("--ctx-strategy=full") == expected_ids(("full",))


def test_unknown_strategy_is_a_usage_error_listing_the_known_names(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    result = ctx.run("--ctx-strategy=headtail,slidnig")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "--ctx-strategy" in text
    assert "'slidnig'" in text
    for name in (*BUILTIN_STRATEGIES, "all", "module:Class"):
        assert name in text
    assert_no_traceback(result)


# -- other options ----------------------------------------------------------------------


def test_bad_fail_on_is_a_usage_error_quoting_the_value(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    result = ctx.run("--ctx-fail-on=bogus")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "--ctx-fail-on" in text and "'bogus'" in text
    assert "context_loss, fail, never" in text
    assert_no_traceback(result)


def test_unknown_mock_model_is_a_usage_error(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    result = ctx.run("--ctx-model=ctxeval/nope")
    text = output(result)
    assert "'ctxeval/nope'" in text and "ctxeval/oracle" in text
    assert_no_traceback(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_unknown_mock_model_is_reported_before_anything_runs(ctx):
    """What holds today even with the bug above: the run stops, nothing is
    evaluated, and the message names the bad model and the available mocks."""
    ctx.scenario("pair", TWO_SCENARIOS)
    result = ctx.run("--ctx-model=ctxeval/nope")
    assert result.ret != pytest.ExitCode.OK
    assert "--ctx-model: unknown mock model 'ctxeval/nope'" in output(result)
    assert "ctxeval/lost-in-middle" in output(result)
    assert not (ctx.path / "reports" / "results.jsonl").exists()


# -- which YAML is a scenario --------------------------------------------------------------


def test_yaml_outside_the_scenario_dirs_is_collected_only_from_a_named_folder(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ctx.write(".github/workflows/ci.yml", "on: [push]\njobs: {test: {runs-on: ubuntu-latest}}\n")
    ctx.write("docker-compose.yml", "services:\n  db:\n    image: postgres:16\n")
    # A valid scenario in the wrong place: it would add items if collected.
    ctx.write("fixtures/looks_like_a_scenario.yaml", one_scenario("misplaced"))
    assert ctx.collect_ids(FOUR_OPTION) == expected_ids()
    # A folder named on the command line is searched, but only for files that
    # look like scenarios: the workflow file stays other YAML.
    result = ctx.run("--collect-only", "-q", "--ctx-strategy=full", "fixtures", ".github")
    assert item_ids(result) == ["fixtures/looks_like_a_scenario.yaml::misplaced::launch-code[full]"]
    assert "error" not in output(result).lower()


def test_a_yaml_file_named_on_the_command_line_is_collected(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ctx.write("extra/one.yaml", one_scenario("extra-one"))
    ids = ctx.collect_ids("extra/one.yaml", "--ctx-strategy=full")
    assert ids == ["extra/one.yaml::extra-one::launch-code[full]"]


def test_scenario_dirs_come_from_the_ini(ctx):
    ctx.ini(ctx_scenario_dirs="evals")
    ctx.scenario("pair", TWO_SCENARIOS)  # under scenarios/: no longer a scenario dir
    ctx.write("evals/long/one.yaml", one_scenario("in-evals"))
    assert ctx.collect_ids("--ctx-strategy=full") == [
        "evals/long/one.yaml::in-evals::launch-code[full]"
    ]


# -- module:Class strategies ----------------------------------------------------------------

CUSTOM_STRATEGY = '''
    from pytest_ctxeval.strategies.base import BaseStrategy, Window


    class LastMessageOnly(BaseStrategy):
        """Forgets everything but the current message."""

        name = "last-only"

        def window(self):
            return Window(messages=self.history[-1:])
'''


def test_module_class_strategy_runs_under_its_name(ctx, xdist_args):
    ctx.write("mystrategy.py", CUSTOM_STRATEGY)  # importable via pythonpath = .
    ctx.scenario("recall", one_scenario())
    args = ("--ctx-strategy=mystrategy:LastMessageOnly,full", *xdist_args)
    assert ctx.collect_ids(*args[:1]) == [
        "scenarios/recall.yaml::recall::launch-code[last-only]",
        "scenarios/recall.yaml::recall::launch-code[full]",
    ]
    result = ctx.run(*args)
    result.assert_outcomes(passed=1, failed=1)
    records = by_key(ctx.results())
    assert records[("recall", "last-only", "launch-code")]["classification"] == "context_loss"
    assert records[("recall", "full", "launch-code")]["classification"] == "ok"


def test_module_class_that_does_not_exist_is_a_usage_error(ctx):
    ctx.write("mystrategy.py", CUSTOM_STRATEGY)
    ctx.scenario("recall", one_scenario())
    result = ctx.run("--ctx-strategy=mystrategy:Nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "module 'mystrategy' has no attribute 'Nope'" in output(result)
    assert_no_traceback(result)


# -- tags are markers ---------------------------------------------------------------------


def test_tags_select_scenarios_with_dash_m(ctx, xdist_args):
    ctx.scenario("tagged", one_scenario("tagged", "[smoke, needle]"))
    ctx.scenario("untagged", one_scenario("untagged", "[slow]"))
    result = ctx.run("-m", "smoke", "--ctx-strategy=full,headtail", *xdist_args)
    result.assert_outcomes(passed=2)
    assert {r["scenario"] for r in ctx.results()} == {"tagged"}
    ids = ctx.collect_ids("-m", "not smoke", "--ctx-strategy=full")
    assert ids == ["scenarios/untagged.yaml::untagged::launch-code[full]"]


def test_tags_work_with_strict_markers(ctx):
    ctx.scenario("tagged", one_scenario("tagged", "[smoke]"))
    # A subprocess: in-process runs share pytest's marker cache, which would
    # remember "smoke" from earlier runs and hide an unregistered marker.
    result = ctx.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--strict-markers", "-m", "smoke", "--ctx-strategy=full"
    )
    result.assert_outcomes(passed=1)


def test_hyphenated_tags_become_underscored_markers(ctx):
    """docs/authoring.md: tags become markers, '-' becomes '_'."""
    ctx.scenario("tagged", one_scenario("tagged", "[long-session]"))
    ctx.scenario("other", one_scenario("other", "[short]"))
    ids = ctx.collect_ids("-m", "long_session", "--ctx-strategy=full")
    assert ids == ["scenarios/tagged.yaml::tagged::launch-code[full]"]


def test_an_item_id_from_the_output_can_be_run_again(ctx):
    ctx.scenario("pair", TWO_SCENARIOS)
    ids = ctx.collect_ids("--ctx-strategy=full")
    result = ctx.run(ids[0], "--ctx-strategy=full")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_a_scenario_dir_that_does_not_exist_is_a_usage_error_naming_it(ctx, xdist):
    ctx.ini(ctx_scenario_dirs="scenarios\n    evalz")
    ctx.scenario("pair", TWO_SCENARIOS)
    result = ctx.run("--ctx-strategy=full", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    text = output(result)
    assert "ctx_scenario_dirs: 'evalz' does not exist" in text
    assert str(ctx.path / "pytest.ini") in text
    assert "collected 0 items" not in text
    assert_no_traceback(result)
