"""A broken model stops the run, a dead one stops being waited for.

A model that is not found, a key that is refused or a closed port on the
first calls stops the run with one line naming the model, the base URL and
what to check (no retries, no item after it); transient faults still retry.
After --ctx-breaker calls in a row that time out or cannot connect, the
remaining calls fail at once: every item still gets its record and the
report is written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CtxProject
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    closed_port_url,
    echo_responder,
    error,
    hang,
    model_not_found,
    ops_scenario,
    reply,
    unauthorized,
)

from pytest_ctxeval.llm.client import ModelClient, ModelError

pytestmark = pytest.mark.usefixtures("_preloaded_modules")

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(url: str, **kwargs: Any) -> ModelClient:
    kwargs.setdefault("backoff_s", 0.01)
    return ModelClient("openai/test-model", api_base=url, **kwargs)


# --- fail fast on a broken setup ---------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "advice"),
    [
        (model_not_found, "model not found; check the --ctx-model name"),
        (unauthorized, "the server refused the API key; check the key"),
    ],
)
def test_a_setup_error_on_the_first_call_is_not_retried_and_ends_every_later_call(
    server: FakeOpenAIServer, fault: Any, advice: str
) -> None:
    server.responder = lambda body: fault()
    model = client(server.url)
    with pytest.raises(ModelError) as first:
        model.complete(HI)
    assert str(first.value).startswith(f"openai/test-model at {server.url}: {advice}")
    assert len(server.chat_requests) == 1  # not retried
    with pytest.raises(ModelError) as later:
        model.complete([{"role": "user", "content": "another question"}])
    assert str(later.value) == model.health.stop_line
    assert len(server.chat_requests) == 1  # not even sent
    assert model.health.broken


def test_a_closed_port_is_one_attempt_and_names_what_to_check() -> None:
    url = closed_port_url()
    model = client(url, backoff_s=5.0)
    with pytest.raises(ModelError, match="connection refused; check that the model server is"):
        model.complete(HI)
    assert model.calls == 1  # no backoff, no retry
    with pytest.raises(ModelError, match=f"^openai/test-model at {url}: connection refused"):
        model.complete([{"role": "user", "content": "another question"}])
    assert model.calls == 1


def test_after_an_answer_a_not_found_is_that_calls_error_only(server: FakeOpenAIServer) -> None:
    server.script(reply("fine"), model_not_found(), reply("fine again"))
    model = client(server.url)
    assert model.complete(HI).content == "fine"
    with pytest.raises(ModelError, match="^NotFoundError: "):
        model.complete([{"role": "user", "content": "two"}])
    assert model.complete([{"role": "user", "content": "three"}]).content == "fine again"
    assert not model.health.broken


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_errors_on_the_first_call_are_still_retried(
    server: FakeOpenAIServer, status: int
) -> None:
    server.script(error(status), error(status), reply("fine"))
    model = client(server.url)
    assert model.complete(HI).content == "fine"
    assert len(server.chat_requests) == 3
    assert model.health.stop_line is None


# --- the circuit breaker -------------------------------------------------------------


def test_after_k_timeouts_in_a_row_the_remaining_calls_fail_at_once(
    server: FakeOpenAIServer,
) -> None:
    server.responder = lambda body: hang()
    model = client(server.url, deadline_s=0.2, breaker_calls=3)
    for n in range(3):
        with pytest.raises(ModelError, match="no answer within the 0.2 s deadline"):
            model.complete([{"role": "user", "content": f"question {n}"}])
    assert len(server.chat_requests) == 3
    with pytest.raises(ModelError) as opened:
        model.complete([{"role": "user", "content": "question 4"}])
    assert str(opened.value) == (
        f"openai/test-model at {server.url}: 3 calls in a row timed out or could not connect, "
        "so the remaining calls to it fail at once; check that the server is up and answering "
        "(--ctx-timeout bounds each call, --ctx-breaker sets how many calls in a row)"
    )
    assert len(server.chat_requests) == 3  # never sent
    assert not model.health.broken  # the run goes on, its items get records


def test_an_answer_between_timeouts_starts_the_count_again(server: FakeOpenAIServer) -> None:
    server.script(hang(), hang(), reply("fine"), hang(), hang(), reply("still here"))
    model = client(server.url, deadline_s=0.2, breaker_calls=3)
    for n in range(6):
        try:
            model.complete([{"role": "user", "content": f"question {n}"}])
        except ModelError:
            pass
    assert len(server.chat_requests) == 6
    assert model.health.stop_line is None


def test_a_breaker_of_zero_never_opens(server: FakeOpenAIServer) -> None:
    server.responder = lambda body: hang()
    model = client(server.url, deadline_s=0.1, breaker_calls=0)
    for n in range(4):
        with pytest.raises(ModelError, match="deadline"):
            model.complete([{"role": "user", "content": f"question {n}"}])
    assert len(server.chat_requests) == 4


# --- through the plugin ---------------------------------------------------------------

PROBES = (
    '{{id: port, user: "Which port does staging use ({n})?", expect: {{contains: "5432"}}}}',
    '{{id: window, user: "When is the deploy window ({n})?", expect: {{contains: Tuesday}}}}',
)


def write_suite(ctx: CtxProject, scenarios: int = 3) -> None:
    """``scenarios`` x 2 probes x 2 strategies, every request distinct."""
    for n in range(scenarios):
        probes = [probe.format(n=n) for probe in PROBES]
        ctx.scenario(f"ops{n}", ops_scenario(f"ops{n}", *probes))


def run(ctx: CtxProject, url: str, *args: str) -> pytest.RunResult:
    return ctx.run(
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={url}",
        "--ctx-strategy=full,headtail",
        "--ctx-cassettes=cassettes",
        *args,
    )


@pytest.mark.parametrize("fault", ["not found", "closed port"])
def test_a_broken_model_stops_the_run_after_the_first_item_with_one_line(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...], fault: str
) -> None:
    write_suite(ctx)  # 12 items
    url = closed_port_url() if fault == "closed port" else server.url
    server.responder = lambda body: model_not_found()
    result = run(ctx, url, "--ctx-concurrency=1", *xdist_args)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    advice = "model not found" if fault == "not found" else "connection refused"
    line = f"openai/test-model at {url}: {advice}"
    interrupted = [ln for ln in result.outlines if "Interrupted: " in ln]
    assert interrupted and all(line in ln for ln in interrupted), result.outlines
    records = ctx.results()
    # One item per process found it; no item after it ran.
    assert 1 <= len(records) <= 2
    assert all(r["error"].startswith(f"model error: {line}") for r in records)
    if fault == "not found":
        assert len(server.chat_requests) == len(records)
    assert (ctx.path / "reports/ctxeval.html").is_file()


def hang_after(answers: int) -> Any:
    count = {"n": 0}

    def responder(body: dict[str, Any]) -> Reply:
        count["n"] += 1
        return echo_responder(body) if count["n"] <= answers else hang()

    return responder


def test_a_server_that_stops_answering_costs_k_deadlines_and_every_item_gets_a_record(
    ctx: CtxProject, server: FakeOpenAIServer, xdist_args: tuple[str, ...]
) -> None:
    write_suite(ctx)  # 12 items
    server.responder = hang_after(1)
    result = run(
        ctx, server.url, "--ctx-timeout=0.3", "--ctx-breaker=2", "--ctx-concurrency=1", *xdist_args
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = ctx.results()
    assert len(records) == 12
    opened = [r for r in records if "calls in a row timed out" in (r["error"] or "")]
    timed_out = [r for r in records if "deadline" in (r["error"] or "")]
    # The one answer may serve two items (full and headtail send the same window).
    answered = [r for r in records if r["error"] is None or r["classification"] == "model_miss"]
    assert len(answered) <= 2 and len(opened) >= 6
    assert len(opened) + len(timed_out) + len(answered) == 12
    assert all(f"openai/test-model at {server.url}: 2 calls in a row" in r["error"] for r in opened)
    # K = 2 deadlines in a row per process open the breaker: the rest are never
    # sent. The one answer closes the count again (any answer does), and it need
    # not come first: on a loaded machine the first request can miss its 0.3 s
    # deadline (a timeout) and a later request get the answer. So the
    # process that got it sent at most K - 1 before it and K after, any other K.
    k = 2
    workers = 2 if "-n" in xdist_args and "2" in xdist_args else 1
    assert len(server.chat_requests) <= 1 + (k - 1) + k * workers
    assert (ctx.path / "reports/ctxeval.html").is_file()


def test_a_bad_breaker_value_is_a_usage_error(ctx: CtxProject) -> None:
    write_suite(ctx, 1)
    result = ctx.run("--ctx-breaker=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--ctx-breaker: invalid value '-1'; expected a whole number >= 0*"]
    )
