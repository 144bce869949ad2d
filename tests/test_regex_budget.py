"""Regex time is bounded per scenario file and per run, not only per match:
ten catastrophic ``not_regex`` probes in one small file cost one file's
budget, not ten times the per-match limit (and a matrix cannot multiply it).
Budgets are made small here through their environment variables."""

from __future__ import annotations

import pytest
from conftest import assert_no_traceback, output

RUN_OF_A = "a" * 36 + "b"


def catastrophic(scenario_id: str, probes: int) -> str:
    lines = [
        f'  - {{id: p{i}, user: "Question {i}: is {RUN_OF_A} fine?", '
        'expect: {not_regex: "(a|aa)+$"}}'
        for i in range(probes)
    ]
    return "\n".join([f"id: {scenario_id}", "turns:", "  - user: hello", "probes:", *lines]) + "\n"


def test_the_same_search_on_the_same_answer_runs_once(ctx, monkeypatch):
    """Identical answers (here: echoed identical questions) cost one search."""
    # Room for two searches: the probe's own question is a decoy it is scored
    # on first.  `regex`, not `not_regex`: an abstention (a decoy) meets the
    # latter, and such a probe is uncheckable before any answer is searched.
    monkeypatch.setenv("CTXEVAL_MAX_REGEX_SECONDS", "5")
    probes = [
        f'  - {{id: p{i}, user: "Is {RUN_OF_A} fine?", expect: {{regex: "(a|aa)+$"}}}}'
        for i in range(5)
    ]
    ctx.scenario("same", "\n".join(["id: same", "turns:", "  - user: hello", "probes:", *probes]))
    ctx.run("--ctx-strategy=full", "--ctx-model=ctxeval/echo")
    said = errors(ctx.results())
    assert len(set(said)) == 1 and "regex /(a|aa)+$/ took longer than" in said[0], said


def errors(records):
    return [r["error"] or "" for r in records]


@pytest.mark.parametrize("mode", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_ten_catastrophic_probes_in_one_file_spend_one_file_budget(ctx, monkeypatch, mode):
    monkeypatch.setenv("CTXEVAL_MAX_REGEX_SECONDS", "1")
    ctx.scenario("bomb", catastrophic("bomb", 10))
    result = ctx.run("--ctx-strategy=full", "--ctx-model=ctxeval/echo", *mode)
    assert_no_traceback(result)
    said = errors(ctx.results())
    assert len(said) == 10
    assert all(s.startswith("cannot score") for s in said), said
    spent = [s for s in said if "regex time of scenarios/bomb.yaml is spent" in s]
    # At most the searches that started before the budget ran out timed out;
    # every later one was refused at once, naming the budget and its variable.
    assert len(spent) >= 8, said
    assert all("CTXEVAL_MAX_REGEX_SECONDS" in s for s in spent)


def test_the_run_budget_bounds_every_file_together(ctx, monkeypatch):
    monkeypatch.setenv("CTXEVAL_MAX_REGEX_RUN_SECONDS", "1")
    ctx.scenario("bomb-a", catastrophic("bomb-a", 3))
    ctx.scenario("bomb-b", catastrophic("bomb-b", 3))
    result = ctx.run("--ctx-strategy=full", "--ctx-model=ctxeval/echo")
    assert_no_traceback(result)
    said = errors(ctx.results())
    assert len(said) == 6
    refused = [s for s in said if "regex time of this run is spent" in s]
    assert len(refused) >= 4, said
    assert all("CTXEVAL_MAX_REGEX_RUN_SECONDS" in s for s in refused)


def test_a_harmless_regex_still_scores(ctx):
    ctx.scenario(
        "fine",
        """
        id: fine
        turns:
          - user: "The port is 5432."
        probes:
          - {id: port, user: "Which port?", expect: {regex: "54\\\\d\\\\d", not_regex: "(a|aa)+$"}}
        """,
    )
    result = ctx.run("--ctx-strategy=full")
    assert result.ret == 0, output(result)
    assert ctx.results()[0]["verdict"] == "pass"
