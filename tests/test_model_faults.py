"""Model faults over real HTTP: retries with backoff on 429/5xx and timeouts,
no retry on a context-length error, malformed tool calls, and, through the
whole plugin, a fault becoming that item's `error` record while the run goes
on and the report is written.  Also --ctx-concurrency."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    context_length_error,
    echo_responder,
    error,
    hang,
    last_user_text,
    ops_scenario,
    reply,
    tool_call_reply,
)

from pytest_ctxeval.evaluate.probe import ask
from pytest_ctxeval.llm import client as client_module
from pytest_ctxeval.llm.client import ModelClient, ModelError
from pytest_ctxeval.strategies.base import Window

pytest_plugins = ["pytester"]
# conftest.py: litellm and pandas imported before any in-process pytester run.
pytestmark = pytest.mark.usefixtures("_preloaded_modules")

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(server: FakeOpenAIServer, **kwargs: Any) -> ModelClient:
    return ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01, **kwargs)


# --- the client against a real HTTP server ----------------------------------


def test_429_twice_then_success_is_retried_with_backoff(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(client_module, "wait_before_retry", waits.append)
    openai_server.script(error(429), error(429), reply("hello there"))
    model = client(openai_server)
    completion = model.complete(HI)
    assert completion.content == "hello there"
    # Our retries are the only ones: exactly one request per attempt.
    assert len(openai_server.chat_requests) == 3
    assert model.calls == 3
    assert waits == [0.01, 0.02]  # backoff 0.01, then doubled


def test_retry_after_header_sets_the_wait(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The provider's hint (20 ms) wins over the client's own backoff (5 s):
    # the wait chosen is read, not timed (a loaded machine would blur it).
    waits: list[float] = []
    monkeypatch.setattr(client_module, "wait_before_retry", waits.append)
    openai_server.script(error(429, retry_after_ms=20), reply("ok"))
    model = ModelClient("openai/test-model", api_base=openai_server.url, backoff_s=5.0)
    assert model.complete(HI).content == "ok"
    assert waits == [pytest.approx(0.02)]


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_retried_then_reported(openai_server: FakeOpenAIServer, status: int) -> None:
    openai_server.script(*[error(status)] * 10)
    with pytest.raises(ModelError, match=r"after 4 attempts") as excinfo:
        client(openai_server).complete(HI)
    assert len(openai_server.chat_requests) == 4
    message = str(excinfo.value)
    assert "litellm." not in message  # wrapper prefixes stripped: one readable line
    assert "server" in message.lower() or "overloaded" in message.lower()


def test_5xx_once_then_success(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(error(500), reply("recovered"))
    assert client(openai_server).complete(HI).content == "recovered"
    assert len(openai_server.chat_requests) == 2


def test_context_too_long_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(context_length_error(), reply("never sent"))
    with pytest.raises(ModelError) as excinfo:
        client(openai_server).complete(HI)
    assert len(openai_server.chat_requests) == 1
    assert str(excinfo.value).startswith("ContextWindowExceededError: ")
    assert "maximum context length is 8192 tokens" in str(excinfo.value)


def test_other_bad_request_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(error(400, "Invalid value for 'messages'"), reply("never sent"))
    with pytest.raises(ModelError, match="Invalid value for 'messages'"):
        client(openai_server).complete(HI)
    assert len(openai_server.chat_requests) == 1


def test_timeout_is_retried_then_reported(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(reply("slow", delay_s=6), reply("slow", delay_s=6))
    model = client(openai_server, timeout_s=0.3, max_attempts=2)
    started = time.perf_counter()
    # litellm names a read time-out Timeout, or InternalServerError "timed out"
    # when httpx's own timer fires first (on a loaded machine).
    with pytest.raises(ModelError, match=r"Timeout after 2 attempts|after 2 attempts: .*timed out"):
        model.complete(HI)
    assert len(openai_server.chat_requests) == 2
    # Waiting out the server would take 12 s; giving up on time takes ~0.6 s
    # (the bound leaves room for a loaded machine).
    assert time.perf_counter() - started < 6


def test_tool_call_round_trip(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(tool_call_reply("lookup", '{"key": "db-port"}'))
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    completion = client(openai_server).complete(HI, tools)
    assert completion.tool_calls == [
        {
            "id": "call_fake_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"key": "db-port"}'},
        }
    ]
    assert openai_server.chat_requests[0].body["tools"] == tools


def test_malformed_tool_arguments_are_answered_and_the_probe_goes_on(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script(
        tool_call_reply("retrieve_memory", '{"id": "m1"'),  # truncated JSON
        reply("The port is 5432."),
    )
    handled: list[dict[str, Any]] = []

    def handler(name: str, args: dict[str, Any]) -> str:
        handled.append(args)
        return "stored text"

    window = Window(
        messages=list(HI),
        tools=[{"type": "function", "function": {"name": "retrieve_memory", "parameters": {}}}],
        tool_handler=handler,
    )
    answer = ask(client(openai_server), window, model="openai/test-model")
    assert answer.answer == "The port is 5432."
    assert answer.llm_calls == 2
    assert handled == []  # the handler never sees arguments that are not JSON
    assert answer.tool_errors and "malformed arguments for retrieve_memory" in answer.tool_errors[0]
    # The model was told what was wrong with its call.
    second = openai_server.chat_requests[1].body["messages"]
    assert second[-1]["role"] == "tool" and "malformed arguments" in second[-1]["content"]


def test_malformed_response_body_is_a_model_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(*[Reply(200, {}, raw=b"{not json")] * 4)
    with pytest.raises(ModelError):
        client(openai_server).complete(HI)


# --- through the plugin -------------------------------------------------------

FAULTS_YAML = ops_scenario(
    "faults",
    '{id: fine, user: "Which port does the database use?", expect: {contains: asked}}',
    '{id: limited, user: "RATE-LIMITED which port?", expect: {contains: asked}}',
    '{id: huge, user: "TOO-LONG which port?", expect: {contains: asked}}',
)


def faulty(body: dict[str, Any]) -> Reply:
    question = last_user_text(body)
    if "RATE-LIMITED" in question:
        return error(429, retry_after_ms=1)
    if "TOO-LONG" in question:
        return context_length_error()
    return echo_responder(body)


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return {(r := json.loads(line))["nodeid"]: r for line in lines}


def test_faults_become_error_records_and_the_run_goes_on(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    openai_server.responder = faulty
    pytester.makefile(".yaml", **{"scenarios/faults": FAULTS_YAML})
    result = pytester.runpytest(
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={openai_server.url}",
        "--ctx-strategy=full,headtail",
        "--ctx-results=out/results.jsonl",
        "--ctx-report=out/report.html",
        *xdist_args,
    )
    result.assert_outcomes(passed=2, failed=4)
    records = read_records(pytester.path / "out/results.jsonl")
    assert len(records) == 6
    for record in records.values():
        if record["probe"] == "fine":
            assert (record["verdict"], record["classification"], record["error"]) == (
                "pass",
                "ok",
                None,
            )
            assert record["answer"].startswith("You asked: Which port")
            continue
        assert record["verdict"] == "error" and record["classification"] == "error"
        if record["probe"] == "limited":
            assert record["error"].startswith("model error: RateLimitError after 4 attempts")
        else:
            assert record["error"].startswith("the strategy's window (")
            assert "does not fit the model: ContextWindowExceededError: " in record["error"]
            assert "maximum context length" in record["error"]
    report = (pytester.path / "out/report.html").read_text(encoding="utf-8")
    assert "RateLimitError after 4 attempts" in report
    result.stdout.fnmatch_lines(["*error: model error: RateLimitError after 4 attempts*"])


def test_a_fault_in_a_strategys_own_model_call_is_that_runs_error(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    def summaries_fail(body: dict[str, Any]) -> Reply:
        if last_user_text(body).startswith("Summarize"):
            return context_length_error()
        return echo_responder(body)

    openai_server.responder = summaries_fail
    pytester.makefile(".yaml", **{"scenarios/faults": FAULTS_YAML})
    pytester.makefile(
        ".yaml",
        **{
            "strategies/summarize-now": (
                "name: summarize-now\nkind: summarize\n"
                "params: {trigger_tokens: 20, keep_messages: 2}\n"
            )
        },
    )
    result = pytester.runpytest(
        "-p",
        "no:xdist",
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={openai_server.url}",
        "--ctx-strategy=summarize-now,full",
        "--ctx-results=results.jsonl",
        "-k",
        "fine",
    )
    result.assert_outcomes(passed=1, failed=1, deselected=4)
    records = {r["strategy"]: r for r in read_records(pytester.path / "results.jsonl").values()}
    failed = records["summarize-now"]
    assert (failed["verdict"], failed["classification"]) == ("error", "error")
    assert failed["error"].startswith(
        "strategy 'summarize-now' raised ModelError: ContextWindowExceededError: "
    )
    assert records["full"]["verdict"] == "pass"


# --- --ctx-concurrency ---------------------------------------------------------

FOUR_PROBES_YAML = """\
id: four
system: You are a helpful assistant.
turns:
  - user: The staging database listens on port 5432.
  - assistant: Noted.
  - user: The deploy window is Tuesday morning.
  - assistant: Noted.
probes:
  - {id: p1, user: "Question one about the port?", expect: {contains: asked}}
  - {id: p2, user: "Question two about the port?", expect: {contains: asked}}
  - {id: p3, user: "Question three about the port?", expect: {contains: asked}}
  - {id: p4, user: "Question four about the port?", expect: {contains: asked}}
"""


def slow(body: dict[str, Any]) -> Reply:
    answer = echo_responder(body)
    answer.delay_s = 0.25
    return answer


def run_four(
    pytester: pytest.Pytester,
    server: FakeOpenAIServer,
    *args: str,
    xdist_args: tuple[str, ...] = ("-p", "no:xdist"),
) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"scenarios/four": FOUR_PROBES_YAML})
    # A window that differs from the full context: the last turn only.
    pytester.makefile(
        ".yaml", **{"strategies/sliding-1": "name: sliding-1\nkind: sliding\nparams: {turns: 1}\n"}
    )
    return pytester.runpytest(
        *xdist_args,
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={server.url}",
        "--ctx-strategy=full,sliding-1",
        "--ctx-cassettes=none-used",
        "--ctx-record=all",
        *args,
    )


def comparable(path: Path) -> dict[str, dict[str, Any]]:
    records = read_records(path)
    for record in records.values():
        # Run-specific: the run id, its start time and the time calls took.
        del record["run_id"], record["started_at"], record["latency_s"]
    return records


def test_concurrency_overlaps_model_calls_and_keeps_records_identical(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    openai_server.responder = slow
    run_four(
        pytester, openai_server, "--ctx-concurrency=1", "--ctx-results=seq.jsonl"
    ).assert_outcomes(passed=8)
    assert openai_server.peak_in_flight == 1
    sequential_requests = len(openai_server.chat_requests)

    openai_server.peak_in_flight = 0
    openai_server.requests.clear()
    # Each answer waits until 8 requests were in flight at once: sent
    # together they all are, however slowly the machine sends them.
    openai_server.responder, openai_server.hold_until_in_flight = echo_responder, 8
    run_four(
        pytester,
        openai_server,
        "--ctx-concurrency=8",
        "--ctx-results=par.jsonl",
        xdist_args=xdist_args,
    ).assert_outcomes(passed=8)
    # Both runs of the scenario (full, sliding-1) ask their 4 probes at once,
    # 8 answers in flight; under full each answer doubles as the ground
    # truth, being the same request, and sliding-1 reuses those.  Under -n 2
    # the scenario's items all go to one worker, which does the same.
    assert openai_server.peak_in_flight == 8
    assert len(openai_server.chat_requests) == sequential_requests == 8
    assert comparable(pytester.path / "seq.jsonl") == comparable(pytester.path / "par.jsonl")


def test_calls_of_a_scenarios_runs_wait_for_one_deadline_together(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    # A server that never answers: every call of both runs is sent before
    # the first deadline passes, so the scenario costs one --ctx-timeout, not
    # one per run.  (Run after run, the first run's timeouts would open the
    # circuit breaker before the second run had sent anything.)
    openai_server.responder = lambda body: hang()
    run_four(
        pytester,
        openai_server,
        "--ctx-concurrency=8",
        "--ctx-timeout=3",  # room for 8 calls to go out on a loaded machine
        "--ctx-results=hung.jsonl",
    ).assert_outcomes(failed=8)
    assert len(openai_server.chat_requests) == 8
    records = read_records(pytester.path / "hung.jsonl")
    assert len(records) == 8
    assert all("no answer within the 3 s deadline" in r["error"] for r in records.values())


def test_deselected_probes_cost_no_model_call(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    result = run_four(pytester, openai_server, "-k", "p2 or p3")
    result.assert_outcomes(passed=4, deselected=4)
    asked = {last_user_text(r.body) for r in openai_server.chat_requests}
    assert asked == {"Question two about the port?", "Question three about the port?"}


@pytest.mark.parametrize("bad", ["0", "-2", "many", "1.5"])
def test_bad_concurrency_is_a_usage_error_quoting_the_value(
    pytester: pytest.Pytester, bad: str
) -> None:
    result = pytester.runpytest(f"--ctx-concurrency={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--ctx-concurrency: invalid value '{bad}'; expected a whole number >= 1*"]
    )


def test_concurrency_ini_twin_and_option_wins(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    openai_server.responder = slow
    pytester.makeini("[pytest]\nctx_concurrency = 1\n")
    run_four(pytester, openai_server).assert_outcomes(passed=8)
    assert openai_server.peak_in_flight == 1
    openai_server.peak_in_flight, openai_server.hold_until_in_flight = 0, 3
    run_four(pytester, openai_server, "--ctx-concurrency=3").assert_outcomes(passed=8)
    assert openai_server.peak_in_flight == 3


def test_each_real_model_call_and_retry_is_logged_for_live_progress(
    openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    # `pytest --log-cli-level=INFO` shows these lines while a long run goes on.
    from pytest_ctxeval.llm.cassettes import CallContext

    openai_server.script(error(429), reply("hello there"))
    with caplog.at_level("INFO", logger="pytest_ctxeval.models"):
        client(openai_server).complete(HI, context=CallContext("scen", "headtail", "p1"))
    messages = [r.getMessage() for r in caplog.records if r.name == "pytest_ctxeval.models"]
    assert any("RateLimitError, attempt 1 of" in m for m in messages)
    assert any(
        "scenario 'scen', strategy 'headtail', probe 'p1'" in m and "prompt" in m for m in messages
    )


def test_the_call_log_numbers_calls_against_the_planned_total_with_an_id_each(
    openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Lines of calls that overlap (threads, xdist workers) must be told apart:
    # each carries its number of the planned total and an id of its own.
    import re

    from pytest_ctxeval.llm.call_meter import METER

    METER.reset()
    METER.plan(2)
    openai_server.script(error(429), reply("one"), reply("two"), reply("three"))
    model = client(openai_server)
    with caplog.at_level("INFO", logger="pytest_ctxeval.models"):
        for text in ("first", "second", "third"):
            model.complete([{"role": "user", "content": text}])
    messages = [r.getMessage() for r in caplog.records if r.name == "pytest_ctxeval.models"]
    labels = [re.search(r"call (\S+) \[(\w+)\]", m) for m in messages]
    assert all(labels), messages
    found = [(m.group(1), m.group(2)) for m in labels if m is not None]
    # The retry's warning, then the three answers; past the plan, no total.
    assert [number for number, _ in found] == ["1/2", "1/2", "2/2", "3"], messages
    assert found[0][1] == found[1][1]  # the retry and its answer: one call
    assert len({call_id for _, call_id in found[1:]}) == 3
    METER.reset()


def test_a_tool_call_turn_without_text_goes_out_with_empty_content(
    openai_server: FakeOpenAIServer,
) -> None:
    # llama.cpp's chat templates fail with a 500 on `content: null`.
    openai_server.script(reply("ok"))
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    client(openai_server).complete(
        [
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "data"},
        ]
    )
    (request,) = openai_server.chat_requests
    sent = request.body["messages"]
    assert sent[1]["content"] == "" and sent[1]["tool_calls"][0]["id"] == "c1"


def test_a_missing_api_key_is_reported_at_once_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    waits: list[float] = []
    monkeypatch.setattr(client_module, "wait_before_retry", waits.append)
    model = ModelClient("openai/gpt-4o-mini", backoff_s=5.0)
    with pytest.raises(ModelError, match="api_key|credentials"):
        model.complete(HI)
    assert model.calls == 1
    assert waits == []  # no backoff wait
