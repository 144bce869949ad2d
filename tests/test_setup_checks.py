"""A setup that cannot work stops the run at once with one usage error: a real
model whose provider key is missing from the environment is reported before
anything is collected, not as one failure per item."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import CtxProject, assert_no_traceback
from fake_openai_server import FakeOpenAIServer, ops_scenario, reply

from pytest_ctxeval.llm.models import describe_unknown_model

SCENARIO = ops_scenario("ops", '{id: port, user: "Which port?", expect: {contains: "54"}}')

# Every variable litellm reads a key from for the providers used below.
PROVIDER_KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.errlines if line.strip()]


def test_a_missing_provider_key_is_one_usage_error_before_any_item(
    ctx: CtxProject, no_keys: None
) -> None:
    ctx.scenario("ops", SCENARIO)
    result = ctx.run("--ctx-model=openai/gpt-4o-mini", "--ctx-strategy=full,sliding")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_lines(result) == [
        "ERROR: --ctx-model: model 'openai/gpt-4o-mini' needs an API key from the "
        "environment; not set: OPENAI_API_KEY (or pass --ctx-api-base for a server that "
        "needs no key)"
    ]
    # No item ran, so nothing was asked of the model.
    assert "failed" not in result.stdout.str() and "passed" not in result.stdout.str()
    assert_no_traceback(result)


def test_the_error_names_every_variable_litellm_would_accept(no_keys: None) -> None:
    problem = describe_unknown_model("gemini/gemini-1.5-flash")
    assert problem is not None
    assert "'gemini/gemini-1.5-flash'" in problem
    assert "not set: GOOGLE_API_KEY, GEMINI_API_KEY" in problem


def test_a_key_in_the_environment_passes_the_check(
    no_keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert describe_unknown_model("openai/gpt-4o-mini") is None


def test_a_local_server_needs_no_key(
    ctx: CtxProject, no_keys: None, server: FakeOpenAIServer
) -> None:
    server.responder = lambda body: reply("The port is 54")
    ctx.scenario("ops", SCENARIO)
    result = ctx.run(
        "--ctx-model=openai/test-model", f"--ctx-api-base={server.url}", "--ctx-strategy=full"
    )
    result.assert_outcomes(passed=1)
    assert server.chat_requests


def test_a_mock_model_needs_no_key(ctx: CtxProject, no_keys: None) -> None:
    ctx.scenario("ops", SCENARIO)
    assert ctx.run("--ctx-strategy=full").ret == pytest.ExitCode.OK


def test_replaying_cassettes_only_needs_no_key(no_keys: None) -> None:
    assert describe_unknown_model("openai/gpt-4o-mini", calls_model=False) is None


def test_a_missing_base_url_with_a_default_is_left_to_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # litellm lists OLLAMA_API_BASE as missing, but Ollama defaults to localhost.
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    assert describe_unknown_model("ollama/llama3") is None


def test_a_replay_only_run_needs_no_key(ctx: CtxProject, no_keys: None) -> None:
    # --ctx-record=none sends nothing: a missing recording is the item's error,
    # not a missing key.
    ctx.scenario("ops", SCENARIO)
    result = ctx.run("--ctx-model=openai/gpt-4o-mini", "--ctx-strategy=full", "--ctx-record=none")
    result.assert_outcomes(failed=1)
    assert "no recorded response" in result.stdout.str()


def test_a_key_that_is_set_is_enough_for_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    # litellm reports all three Azure variables when any is missing; with the
    # key there, the base URL and version are left to the call.
    monkeypatch.setenv("AZURE_API_KEY", "test-key")
    for name in ("AZURE_API_BASE", "AZURE_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    assert describe_unknown_model("azure/my-deployment") is None
    monkeypatch.delenv("AZURE_API_KEY")
    problem = describe_unknown_model("azure/my-deployment")
    assert problem is not None
    assert "not set: AZURE_API_BASE, AZURE_API_VERSION, AZURE_API_KEY" in problem


def test_a_judge_without_its_key_is_a_usage_error_too(ctx: CtxProject, no_keys: None) -> None:
    ctx.scenario("ops", SCENARIO)
    result = ctx.run("--ctx-judge=openai/gpt-4o-mini", "--ctx-strategy=full")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_lines(result)[0].startswith(
        "ERROR: --ctx-judge: model 'openai/gpt-4o-mini' needs an API key"
    )
