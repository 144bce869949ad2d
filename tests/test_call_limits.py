"""Every real-model call is bounded: an answer length (max_tokens), a
deadline over all its attempts, and 502s retried like other 5xx."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import CtxProject
from fake_openai_server import FakeOpenAIServer, error, ops_scenario, reply

from pytest_ctxeval.llm.client import ModelClient, ModelError

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_a_502_is_retried_like_other_server_errors(server: FakeOpenAIServer) -> None:
    server.script(error(502, "Bad gateway"), reply("recovered"))
    client = ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01)
    assert client.complete(HI).content == "recovered"
    assert len(server.chat_requests) == 2


def test_a_server_that_never_finishes_is_given_up_at_the_deadline(
    server: FakeOpenAIServer,
) -> None:
    # Each attempt alone is within its own timeout; together they are not.
    server.responder = lambda body: reply("late", delay_s=3.0)
    client = ModelClient(
        "openai/test-model", api_base=server.url, timeout_s=30, deadline_s=0.5, backoff_s=0.01
    )
    started = time.perf_counter()
    with pytest.raises(ModelError, match=r"no answer within the 0.5 s deadline"):
        client.complete(HI)
    assert time.perf_counter() - started < 2.5  # not the server's 3 s


def test_no_retry_is_started_that_the_deadline_cannot_wait_for(
    server: FakeOpenAIServer,
) -> None:
    server.script(error(503), reply("too late"))
    client = ModelClient("openai/test-model", api_base=server.url, deadline_s=1.0, backoff_s=5.0)
    with pytest.raises(ModelError, match=r"no time left for attempt 2 within the 1 s deadline"):
        client.complete(HI)
    assert len(server.chat_requests) == 1


def test_max_tokens_goes_to_real_models_and_cut_answers_are_errors(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    server.responder = lambda body: reply("The port is 54", finish_reason="length")
    ctx.scenario(
        "ops", ops_scenario("ops", '{id: port, user: "Which port?", expect: {contains: "54"}}')
    )
    result = ctx.run(
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={server.url}",
        "--ctx-strategy=full",
        "--ctx-max-tokens=64",
        *xdist_args,
    )
    assert {r.body.get("max_tokens") for r in server.chat_requests} == {64}
    result.assert_outcomes(failed=1)
    (record,) = ctx.results()
    assert record["error"] == (
        "model error: the answer was cut off at the token limit (finish_reason: length)"
    )


def test_the_default_answer_limit_is_1024_tokens(server: FakeOpenAIServer) -> None:
    from pytest_ctxeval.evaluate.runner import EvalSettings, Evaluator

    evaluator = Evaluator(EvalSettings(model="openai/test-model", api_base=server.url))
    evaluator.client.complete(HI)
    assert server.chat_requests[0].body["max_tokens"] == 1024


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--ctx-max-tokens=0", "--ctx-max-tokens: invalid value '0'"),
        ("--ctx-timeout=soon", "--ctx-timeout: invalid value 'soon'"),
    ],
)
def test_bad_limits_are_usage_errors(ctx: CtxProject, flag: str, message: str) -> None:
    ctx.scenario("ops", ops_scenario("ops", '{id: port, user: "Which port?"}'))
    result = ctx.run(flag)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_rate_limit_that_mentions_tokens_is_still_retried(server: FakeOpenAIServer) -> None:
    server.script(error(429, "Too many tokens per minute; retry shortly."), reply("ok now"))
    client = ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01)
    assert client.complete(HI).content == "ok now"
    assert len(server.chat_requests) == 2
