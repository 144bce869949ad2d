"""Verdicts that stay true: unusable answers are errors, identical requests are
asked once, repeats give rates, sessions longer than the model's window get
``beyond_context``, and strategies cannot corrupt the run."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CtxProject, by_key
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    context_length_error,
    echo_responder,
    last_user_text,
    ops_scenario,
    reply,
)

from pytest_ctxeval.evaluate.judge import SYSTEM as JUDGE_SYSTEM
from pytest_ctxeval.evaluate.outcome import Rates, classify, credibly_below, wilson_interval
from pytest_ctxeval.evaluate.probe import ask
from pytest_ctxeval.llm.cassettes import CassetteStore
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.strategies.base import Window

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def real_model(server: FakeOpenAIServer, *extra: str) -> tuple[str, ...]:
    return ("--ctx-model=openai/test-model", f"--ctx-api-base={server.url}", *extra)


# --- nothing vacuous passes --------------------------------------------------


@pytest.mark.parametrize(
    ("served", "reason"),
    [
        (reply(None), "the model returned no answer (content null)"),
        (reply("   \n"), "the model returned an empty answer"),
        (
            reply("The port is 54", finish_reason="length"),
            "the answer was cut off at the token limit (finish_reason: length)",
        ),
    ],
)
def test_an_unusable_answer_is_an_error_not_an_answer(
    server: FakeOpenAIServer, served: Reply, reason: str
) -> None:
    server.script(served)
    client = ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01)
    answer = ask(client, Window(list(HI)), model="openai/test-model")
    assert answer.error == reason


def test_an_empty_answer_never_passes_a_not_contains_probe(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    # "does not contain requests" is met by an empty string: it must not pass.
    # (A probe of nothing but the ban is uncheckable: an abstention meets it too.)
    server.responder = lambda body: reply("")
    probe = (
        '{id: http, user: "Write a downloader.", expect: {not_contains: requests, regex: "def "}}'
    )
    ctx.scenario("empty", ops_scenario("empty", probe))
    result = ctx.run(*real_model(server, "--ctx-strategy=full"), *xdist_args)
    result.assert_outcomes(failed=1)
    (record,) = ctx.results()
    assert (record["verdict"], record["classification"]) == ("error", "error")
    assert record["error"] == "model error: the model returned an empty answer"


# --- identical requests are asked once ---------------------------------------


@pytest.mark.parametrize("mode", ["new", "all"])
def test_an_identical_request_is_asked_once_per_run_whatever_the_record_mode(
    server: FakeOpenAIServer, tmp_path: Any, mode: str
) -> None:
    answers = itertools.count()
    server.responder = lambda body: reply(f"answer {next(answers)}")
    client = ModelClient(
        "openai/test-model",
        api_base=server.url,
        cassettes=CassetteStore(tmp_path, mode),  # type: ignore[arg-type]
    )
    first, second = client.complete(HI), client.complete(list(HI))
    assert first.content == second.content == "answer 0"
    assert len(server.chat_requests) == 1


def test_concurrent_identical_requests_wait_for_one_answer(server: FakeOpenAIServer) -> None:
    server.responder = lambda body: reply("slow", delay_s=0.3)
    client = ModelClient("openai/test-model", api_base=server.url)
    threads = [threading.Thread(target=client.complete, args=(list(HI),)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.chat_requests) == 1


def test_a_nondeterministic_server_cannot_produce_a_spurious_rescue(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    # Under `full` the strategy's request is the ground truth's request; a
    # server that answers it differently each time must not make them disagree.
    flips = itertools.count()
    server.responder = lambda body: reply("port 5432" if next(flips) % 2 else "no idea")
    ctx.scenario(
        "flaky",
        ops_scenario("flaky", '{id: port, user: "Which port?", expect: {contains: "5432"}}'),
    )
    ctx.run(*real_model(server, "--ctx-strategy=full", "--ctx-record=all"), *xdist_args)
    (record,) = ctx.results()
    assert record["answer"] == record["ground_truth_answer"]
    assert record["classification"] in ("ok", "model_miss")


# --- repeats -------------------------------------------------------------------


def test_wilson_interval_known_values() -> None:
    assert wilson_interval(0, 5) == (0.0, 0.4345)
    assert wilson_interval(5, 5) == (0.5655, 1.0)
    low, high = wilson_interval(7, 10)
    assert (round(low, 3), round(high, 3)) == (0.397, 0.892)


def test_a_loss_is_declared_only_when_credible() -> None:
    assert credibly_below(0, 3, 3, 3)
    assert not credibly_below(1, 3, 3, 3)
    assert not credibly_below(0, 2, 2, 2)  # two asks each cannot show it
    assert classify(Rates(0, 3), Rates(3, 3)) == "context_loss"
    assert classify(Rates(1, 3), Rates(3, 3)) == "unstable"
    assert classify(Rates(3, 3), Rates(0, 3)) == "rescued"
    assert classify(Rates(3, 3), Rates(3, 3)) == "ok"
    assert classify(Rates(0, 3), Rates(0, 3)) == "model_miss"
    # One ask each: the plain comparison of two verdicts.
    assert classify(Rates(0, 1), Rates(1, 1)) == "context_loss"


def _right_on_even_seeds(server: FakeOpenAIServer) -> None:
    """A noisy model: right when the request's seed is even (or absent), wrong otherwise."""

    def respond(body: dict[str, Any]) -> Reply:
        seed = body.get("seed") or 0
        return reply("It is port 5432." if seed % 2 == 0 else "I do not know.")

    server.responder = respond


def test_repeats_carry_both_pass_rates_and_flag_unstable_probes(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    _right_on_even_seeds(server)
    ctx.scenario(
        "noisy",
        ops_scenario("noisy", '{id: port, user: "Which port?", expect: {contains: "5432"}}'),
    )
    result = ctx.run(*real_model(server, "--ctx-strategy=sliding", "--ctx-repeat=4"), *xdist_args)
    (record,) = ctx.results()
    # Seeds 0 (none), 1, 2, 3: two right, two wrong, on both sides.
    assert record["repeat"] == 4
    assert record["pass_rate"] == 0.5 and record["ground_truth_pass_rate"] == 0.5
    assert record["pass_rate_interval"] == pytest.approx([0.15, 0.85], abs=0.01)
    assert record["unstable"] is True
    assert record["classification"] == "unstable"
    assert len(record["answers"]) == 4 and len(record["ground_truth_answers"]) == 4
    # Not credibly a context loss: the gate does not fail on it.
    result.assert_outcomes(passed=1)
    seeds = sorted({str(r.body.get("seed")) for r in server.chat_requests})
    assert seeds == ["1", "2", "3", "None"]


def test_a_consistent_loss_over_repeats_is_context_loss(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario(
        "forgets",
        """
        id: forgets
        system: You are helpful.
        turns:
          - user: The vault code is 7781.
          - assistant: Noted.
          - generate: {kind: chitchat, turns: 12, seed: 4}
        probes:
          - {id: code, user: "What is the vault code?", expect: {contains: "7781"}}
        """,
    )
    result = ctx.run("--ctx-strategy=sliding,full", "--ctx-repeat=3", *xdist_args)
    records = by_key(ctx.results())
    lost = records[("forgets", "sliding", "code")]
    assert lost["classification"] == "context_loss"
    assert (lost["pass_rate"], lost["ground_truth_pass_rate"]) == (0.0, 1.0)
    assert records[("forgets", "full", "code")]["classification"] == "ok"
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*passed 0/3 [[]0.00, 0.56[]] under the strategy*"])


def test_the_mock_draws_afresh_on_each_repeat() -> None:
    from pytest_ctxeval.llm.providers import _reply_for

    filler = [
        {"role": "user", "content": f"Note {i}: the shelf {i} holds item {i}."} for i in range(30)
    ]
    messages = [*filler, {"role": "user", "content": "What does shelf 15 hold?"}]
    replies = {_reply_for("lost-in-middle", messages, [], None, seed).content for seed in range(12)}
    assert len(replies) > 1
    again = {_reply_for("lost-in-middle", messages, [], None, 3).content for _ in range(3)}
    assert len(again) == 1  # seeded: the same repeat gives the same answer


# --- sessions longer than the model's window --------------------------------------

LONG = """
id: long
system: You are helpful.
turns:
  - user: The vault code is 7781.
  - assistant: Noted.
  - user: Show me the spans.
  - tool: {name: query_spans, generate: {kind: json_rows, rows: 80, seed: 7}}
  - assistant: Here they are.
  - generate: {kind: chitchat, turns: 30, seed: 2}
probes:
  - {id: code, user: "What is the vault code?", expect: {contains: "7781"}}
  - {id: open, user: "What did we talk about last?"}
"""


def test_a_full_context_beyond_the_window_gives_beyond_context(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("long", LONG)
    result = ctx.run(
        "--ctx-strategy=sliding,headtail", "--ctx-context-window=2000", "-rs", *xdist_args
    )
    records = by_key(ctx.results())
    for strategy in ("sliding", "headtail"):
        scored = records[("long", strategy, "code")]
        assert scored["classification"] == "beyond_context"
        assert scored["ground_truth_answer"] is None
        assert scored["full_prompt_tokens"] > 2000
        # Still scored against its expectation, and kept.
        assert scored["verdict"] in ("pass", "fail")
        unscored = records[("long", strategy, "open")]
        assert (unscored["classification"], unscored["verdict"]) == ("beyond_context", "error")
    assert records[("long", "sliding", "code")]["verdict"] == "fail"
    assert records[("long", "headtail", "code")]["verdict"] == "pass"
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*beyond_context: nothing to score against*"])


def test_the_providers_context_length_error_gives_beyond_context(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    def small_window(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) > 4:
            return context_length_error()
        return reply("It is port 5432.") if "port" in last_user_text(body) else echo_responder(body)

    server.responder = small_window
    ctx.scenario(
        "ops",
        ops_scenario("ops", '{id: port, user: "Which port?", expect: {contains: "5432"}}'),
    )
    ctx.write("strategies/sliding-2.yaml", "name: sliding-2\nkind: sliding\nparams: {turns: 1}\n")
    result = ctx.run(*real_model(server, "--ctx-strategy=sliding-2"), *xdist_args)
    (record,) = ctx.results()
    assert record["classification"] == "beyond_context", record["error"]
    assert record["verdict"] == "pass"
    assert "maximum context length" in record["no_ground_truth"]
    result.assert_outcomes(passed=1)


# --- strategies cannot corrupt the run --------------------------------------------

MUTATOR = '''
from pytest_ctxeval.strategies.base import BaseStrategy, Window


class Mutator(BaseStrategy):
    """Trims every message it is given in place, as careless context code does."""

    name = "mutator"

    def add(self, message):
        if isinstance(message.get("content"), str):
            message["content"] = message["content"][:12]
        super().add(message)

    def window(self):
        return Window(list(self.history))
'''


@pytest.mark.parametrize(
    "order", ["mutator_strategy:Mutator,full", "full,mutator_strategy:Mutator"]
)
def test_a_strategy_that_edits_messages_in_place_cannot_change_other_results(
    ctx: CtxProject, order: str, xdist_args: tuple[str, ...]
) -> None:
    ctx.write("mutator_strategy.py", MUTATOR)
    ctx.scenario(
        "ops",
        ops_scenario(
            "ops", '{id: day, user: "When is the deploy window?", expect: {contains: Tuesday}}'
        ),
    )
    ctx.run(f"--ctx-strategy={order}", *xdist_args)
    records = by_key(ctx.results())
    full = records[("ops", "full", "day")]
    assert (full["classification"], full["ground_truth_verdict"]) == ("ok", "pass")
    assert "Tuesday morning" in full["ground_truth_answer"]
    # The probe it trimmed is caught at run time: that item's error, named.
    broken = records[("ops", "mutator", "day")]
    assert broken["classification"] == "error"
    assert broken["error"].startswith("strategy 'mutator' broke the window rules: current-message")


RESULT_MOVER = '''
from pytest_ctxeval.strategies.base import BaseStrategy, Window


class ResultMover(BaseStrategy):
    """Puts every tool result at the end of the history, away from its call."""

    name = "result-mover"

    def window(self):
        *rest, current = self.history
        results = [m for m in rest if m.get("role") == "tool"]
        others = [m for m in rest if m.get("role") != "tool"]
        return Window([*others, *results, current])
'''


def test_a_window_that_separates_a_tool_result_from_its_call_is_an_error(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.write("mover_strategy.py", RESULT_MOVER)
    ctx.scenario(
        "tools",
        """
        id: tools
        system: You are helpful.
        turns:
          - user: Run the tests.
          - tool: {name: run_tests, output: "14 passed in 0.82s"}
          - assistant: All 14 tests pass.
          - user: Thanks.
          - assistant: You're welcome.
        probes:
          - {id: count, user: "How many tests passed?", expect: {contains: "14"}}
        """,
    )
    result = ctx.run("--ctx-strategy=mover_strategy:ResultMover", *xdist_args)
    result.assert_outcomes(failed=1)
    (record,) = ctx.results()
    assert record["classification"] == "error"
    assert record["error"].startswith("strategy 'result-mover' broke the window rules: ")
    assert "tool-pairs: tool result call_1 is not right after" in record["error"]


def test_a_strategy_window_over_the_context_window_is_an_error(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("long", LONG)
    ctx.run("--ctx-strategy=full", "--ctx-context-window=2000", *xdist_args)
    records = by_key(ctx.results())
    record = records[("long", "full", "code")]
    assert record["classification"] == "error"
    assert "over the model's context window of 2,000" in record["error"]


# --- agreement without an expectation ------------------------------------------

OPEN = ops_scenario(
    "open",
    '{id: day, user: "When is the deploy window?"}',
    '{id: port, user: "Which port does the database use?"}',
)


def _short_window_answers(body: dict[str, Any]) -> Reply:
    """The full context answers plainly; the short (strategy) window rewords
    with a speaker label, and gets the port wrong."""
    question = last_user_text(body)
    if body["messages"][0]["content"].startswith(JUDGE_SYSTEM[:20]):
        agrees = "5432" in body["messages"][-1]["content"].split("<answer>")[1]
        return reply(json.dumps({"agrees": agrees, "reason": "compared the values"}))
    full = len(body["messages"]) > 4
    if "deploy" in question:
        return reply(
            "The deploy window is Tuesday morning."
            if full
            else "[assistant] Deploy window: Tuesday morning"
        )
    return reply(
        "The database listens on port 5432." if full else "The database listens on port 8080."
    )


SHORT = "name: short\nkind: sliding\nparams: {turns: 1}\n"


def test_a_reworded_answer_agrees_by_token_f1_and_a_different_one_diverges(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    server.responder = _short_window_answers
    ctx.scenario("open", OPEN)
    ctx.write("strategies/short.yaml", SHORT)
    # A high bar: "port 8080" against "port 5432" shares most of its words (F1 0.80).
    result = ctx.run(
        *real_model(server, "--ctx-strategy=short", "--ctx-agreement=0.85"), *xdist_args
    )
    records = by_key(ctx.results())
    reworded = records[("open", "short", "day")]
    assert reworded["classification"] == "ok" and reworded["agreement"] >= 0.85
    wrong = records[("open", "short", "port")]
    assert wrong["classification"] == "divergent"
    assert wrong["failed_checks"] == [
        "agrees with the full-context answer (token F1 0.80, needs 0.85)"
    ]
    result.assert_outcomes(passed=1, failed=1)


def test_a_judge_model_decides_agreement_and_is_recorded(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    server.responder = _short_window_answers
    ctx.scenario("open", OPEN)
    ctx.write("strategies/short.yaml", SHORT)
    judged = real_model(
        server, "--ctx-strategy=short", "--ctx-judge=openai/test-model", "--ctx-cassettes=cassettes"
    )
    result = ctx.run(*judged, *xdist_args)
    result.assert_outcomes(failed=2)
    records = by_key(ctx.results())
    wrong = records[("open", "short", "port")]
    assert wrong["classification"] == "divergent"
    assert wrong["judge"] == {
        "model": "openai/test-model",
        "agrees": False,
        "reason": "compared the values",
    }
    assert records[("open", "short", "day")]["classification"] == "divergent"
    judged = [r for r in server.chat_requests if r.body["messages"][0]["content"] == JUDGE_SYSTEM]
    assert len(judged) == 2
    # Judge calls are recorded like every other call: a replay needs no server.
    server.responder = lambda body: reply("server must not be called")
    before = len(server.chat_requests)
    ctx.run(*judged, "--ctx-record=none", "-p", "no:xdist")
    assert len(server.chat_requests) == before
    assert by_key(ctx.results())[("open", "short", "port")]["judge"]["agrees"] is False


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--ctx-agreement=1.5", "--ctx-agreement: invalid value '1.5'"),
        ("--ctx-repeat=0", "--ctx-repeat: invalid value '0'"),
        ("--ctx-context-window=lots", "--ctx-context-window: invalid value 'lots'"),
    ],
)
def test_bad_values_are_usage_errors(ctx: CtxProject, flag: str, message: str) -> None:
    ctx.scenario("open", OPEN)
    result = ctx.run(flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_strategy_authors_and_scenario_tools_import_the_new_parts_from_the_package() -> None:
    import pytest_ctxeval
    from pytest_ctxeval.scenario.errors import ScenarioWarning
    from pytest_ctxeval.strategies.window_rules import window_violations

    assert pytest_ctxeval.window_violations is window_violations
    assert pytest_ctxeval.ScenarioWarning is ScenarioWarning
    assert {"window_violations", "ScenarioWarning"} <= set(pytest_ctxeval.__all__)
