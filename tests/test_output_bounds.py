"""Every field a server sends back is bounded like an answer is: tool-call
names, arguments and ids, the number of tool calls per answer and per probe,
token counts; a runaway tool loop ends at a documented number of rounds with
a clear error.  Over real HTTP, through the cassettes and the records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import CtxProject
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    echo_responder,
    ops_scenario,
    reply,
    tool_calls_reply,
)

from pytest_ctxeval.evaluate.probe import MAX_TOOL_CALLS_PER_PROBE, MAX_TOOL_STEPS, ask
from pytest_ctxeval.llm.bounds import (
    MAX_TOOL_ARGUMENTS_CHARS,
    MAX_TOOL_CALLS_PER_ANSWER,
    MAX_TOOL_NAME_CHARS,
)
from pytest_ctxeval.llm.cassettes import CassetteStore
from pytest_ctxeval.llm.client import ModelClient, ModelError
from pytest_ctxeval.strategies.base import Window

pytestmark = pytest.mark.usefixtures("_preloaded_modules")

HI = [{"role": "user", "content": "hi"}]
HUGE = 5_000_000
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(server: FakeOpenAIServer, **kwargs: Any) -> ModelClient:
    return ModelClient("openai/test-model", api_base=server.url, backoff_s=0.01, **kwargs)


def test_huge_tool_call_fields_are_capped_live_and_in_the_cassette(
    server: FakeOpenAIServer, tmp_path: Any
) -> None:
    arguments = '{"query": "' + "x" * HUGE + '"}'
    server.script(tool_calls_reply(("n" * HUGE, arguments)))
    server.chat_requests.clear()
    store = CassetteStore(tmp_path / "cassettes", "new")
    [call] = client(server, cassettes=store).complete(HI, TOOLS).tool_calls
    name, args = call["function"]["name"], call["function"]["arguments"]
    assert len(name) <= MAX_TOOL_NAME_CHARS + 40 and name.startswith("nnnn")
    assert len(args) <= MAX_TOOL_ARGUMENTS_CHARS + 40
    assert args.endswith(f"[truncated: {len(arguments):,} chars]")
    written = [p for p in (tmp_path / "cassettes").rglob("*") if p.is_file()]
    assert written and all(p.stat().st_size < 100_000 for p in written)


def test_too_many_tool_calls_in_one_answer_is_an_error(server: FakeOpenAIServer) -> None:
    many = MAX_TOOL_CALLS_PER_ANSWER + 1
    server.script(tool_calls_reply(*[("lookup", "{}")] * many))
    with pytest.raises(ModelError, match=rf"{many} tool calls in one answer; at most 16"):
        client(server).complete(HI, TOOLS)


def test_absurd_token_counts_are_bounded(server: FakeOpenAIServer) -> None:
    server.script(reply("fine", prompt_tokens=10**30, completion_tokens=-5))
    completion = client(server).complete(HI)
    assert completion.prompt_tokens == 100_000_000 and completion.completion_tokens == 0


def test_a_runaway_tool_loop_ends_after_the_documented_rounds(server: FakeOpenAIServer) -> None:
    server.responder = lambda body: tool_calls_reply(("lookup", '{"key": "x"}'))
    window = Window(HI, tools=TOOLS, tool_handler=lambda name, args: "nothing here")
    answer = ask(client(server), window, model="openai/test-model")
    assert answer.error == (
        f"runaway tool loop: the model still called tools after {MAX_TOOL_STEPS} rounds "
        "of tool calls (the limit); the probe got no answer"
    )
    assert answer.answer is None
    assert len(server.chat_requests) == MAX_TOOL_STEPS + 1
    assert "tools" not in server.chat_requests[-1].body  # the last ask offers none


def test_tool_calls_per_probe_are_capped_over_all_rounds(server: FakeOpenAIServer) -> None:
    per_answer = 12  # under the per-answer cap; three rounds pass the per-probe one
    server.responder = lambda body: tool_calls_reply(*[("lookup", "{}")] * per_answer)
    answered: list[str] = []
    window = Window(HI, tools=TOOLS, tool_handler=lambda name, args: answered.append(name) or "")
    answer = ask(client(server), window, model="openai/test-model")
    assert answer.error == (
        f"runaway tool calls: {3 * per_answer} for one probe, over the limit of "
        f"{MAX_TOOL_CALLS_PER_PROBE}; the probe got no answer"
    )
    assert len(answered) == 2 * per_answer  # the third round is not answered


def first_a_huge_tool_call(body: dict[str, Any]) -> Reply:
    if any(m.get("role") == "tool" for m in body.get("messages", [])):
        return echo_responder(body)
    return tool_calls_reply(("retrieve_memory", '{"query": "' + "q" * HUGE + '"}'))


def test_a_server_sending_megabytes_of_arguments_leaves_small_records_and_cassettes(
    ctx: CtxProject, server: FakeOpenAIServer
) -> None:
    server.responder = first_a_huge_tool_call
    ctx.scenario("ops", ops_scenario("ops", '{id: port, user: "Which port?"}'))
    ctx.run(
        "-p",
        "no:xdist",
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={server.url}",
        "--ctx-strategy=full",
        "--ctx-cassettes=cassettes",
        "--ctx-fail-on=never",
    )
    [record] = ctx.results()
    assert record["answer"].startswith("You asked: Which port?")
    assert len(json.dumps(record)) < 100_000
    # The arguments went back to the model capped, not as 5 MB.
    assert all(len(json.dumps(r.body)) < 100_000 for r in server.chat_requests[1:])
    written = [p for p in (ctx.path / "cassettes").rglob("*") if p.is_file()]
    assert len(written) == 2 and all(p.stat().st_size < 100_000 for p in written)
