"""Record/replay cassettes: stable keys, readable deterministic files, the
three record modes, mocks never recorded, no secret ever written, and a
re-run against cassettes that makes zero model calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    ops_scenario,
    reply,
    tool_call_reply,
)

from pytest_ctxeval.llm.cassettes import (
    CallContext,
    CassetteStore,
    build_request,
    call_context,
    request_hash,
)
from pytest_ctxeval.llm.client import ModelClient, ModelError

pytest_plugins = ["pytester"]
# conftest.py: litellm and pandas imported before any in-process pytester run.
pytestmark = pytest.mark.usefixtures("_preloaded_modules")

HI = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which port?"}]
SECRET = "sk-ctxeval-test-SECRET-0123456789abcdef"


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client(api_base: str, directory: Path, mode: str = "new", **kwargs: Any) -> ModelClient:
    store = CassetteStore(directory, mode)  # type: ignore[arg-type]
    return ModelClient(
        "openai/test-model", api_base=api_base, backoff_s=0.01, cassettes=store, **kwargs
    )


def cassette_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


# --- keys ----------------------------------------------------------------------


def test_key_ignores_dict_order_and_depends_on_what_shapes_the_answer() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    base = build_request("openai/m", HI, tools, {"temperature": 0.0})
    reordered = build_request(
        "openai/m",
        [{"content": m["content"], "role": m["role"]} for m in HI],
        [{"function": {"parameters": {}, "name": "f"}, "type": "function"}],
        {"temperature": 0.0},
    )
    assert request_hash(base) == request_hash(reordered)
    assert len(request_hash(base)) == 64
    for changed in (
        build_request("openai/other", HI, tools, {"temperature": 0.0}),
        build_request("openai/m", HI[:1], tools, {"temperature": 0.0}),
        build_request("openai/m", HI, None, {"temperature": 0.0}),
        build_request("openai/m", HI, tools, {"temperature": 0.7}),
        build_request(
            "openai/m", HI, tools, {"temperature": 0.0, "response_format": {"type": "json_object"}}
        ),
    ):
        assert request_hash(changed) != request_hash(base)


# --- the client with a store ---------------------------------------------------


def test_record_then_replay_from_any_server_with_zero_calls(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script(reply("Port 5432.", prompt_tokens=21, completion_tokens=4))
    recorder = client(openai_server.url, tmp_path)
    first = recorder.complete(HI)
    assert (first.content, recorder.calls, len(openai_server.chat_requests)) == ("Port 5432.", 1, 1)

    # Another api_base (nothing listens there) and replay-only: the cassette
    # answers, because where a request is sent is not part of its key.
    openai_server.stop()
    replayer = client("http://127.0.0.1:9/v1", tmp_path, "none")
    again = replayer.complete(HI)
    assert replayer.calls == 0
    assert (again.content, again.prompt_tokens, again.completion_tokens) == ("Port 5432.", 21, 4)


def test_cassette_file_is_readable_sorted_and_deterministic(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script(reply("Port 5432."), reply("Port 5432."))
    client(openai_server.url, tmp_path).complete(HI)
    [path] = cassette_files(tmp_path)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert path.name == data["key"][:16] + ".json"
    assert data["request"] == {
        "model": "openai/test-model",
        "messages": HI,
        "tools": [],
        "params": {"temperature": 0.0},
    }
    assert data["response"] == {
        "content": "Port 5432.",
        "tool_calls": [],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3},
        "cost_usd": 0.0,
        "finish_reason": "stop",
    }
    # Pretty-printed with sorted keys, so a PR diff is readable and stable.
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    # Recording the same answer again gives the same bytes.
    client(openai_server.url, tmp_path, "all").complete(HI)
    assert path.read_text(encoding="utf-8") == text


def test_response_format_is_part_of_the_key(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script(reply("plain"), reply('{"port": 5432}'))
    model = client(openai_server.url, tmp_path)
    json_mode = {"type": "json_object"}
    assert model.complete(HI).content == "plain"
    assert model.complete(HI, response_format=json_mode).content == '{"port": 5432}'
    params = sorted(
        json.dumps(json.loads(p.read_text())["request"]["params"], sort_keys=True)
        for p in cassette_files(tmp_path)
    )
    assert params == [
        '{"response_format": {"type": "json_object"}, "temperature": 0.0}',
        '{"temperature": 0.0}',
    ]


def test_mode_all_always_calls_and_overwrites(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script(reply("old answer"), reply("new answer"))
    client(openai_server.url, tmp_path).complete(HI)
    rerecorder = client(openai_server.url, tmp_path, "all")
    assert rerecorder.complete(HI).content == "new answer"
    assert rerecorder.calls == 1
    [path] = cassette_files(tmp_path)
    assert json.loads(path.read_text())["response"]["content"] == "new answer"
    assert client(openai_server.url, tmp_path, "none").complete(HI).content == "new answer"


def test_mode_new_replays_hits_and_records_misses(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.script(reply("first"), reply("second"))
    model = client(openai_server.url, tmp_path)
    assert model.complete(HI).content == "first"
    assert model.complete(HI).content == "first"  # hit: no second request
    other = [{"role": "user", "content": "Another question?"}]
    assert model.complete(other).content == "second"
    assert (model.calls, len(cassette_files(tmp_path))) == (2, 2)


def test_mode_none_miss_names_scenario_probe_and_request(tmp_path: Path) -> None:
    model = client("http://127.0.0.1:9/v1", tmp_path, "none")
    key = request_hash(build_request("openai/test-model", HI, None, {"temperature": 0.0}))
    with call_context(CallContext("needle-30", "headtail", "vault-code")):
        with pytest.raises(ModelError) as excinfo:
            model.complete(HI)
    message = str(excinfo.value)
    assert "no recorded response for request " + key[:16] in message
    assert "scenario 'needle-30', strategy 'headtail', probe 'vault-code'" in message
    assert "--ctx-record=new" in message
    assert model.calls == 0
    # An explicit context wins over the ambient one.
    with pytest.raises(ModelError, match="probe 'explicit'"):
        model.complete(HI, context=CallContext("s", None, "explicit"))


def test_tool_call_chain_replays(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    openai_server.script(tool_call_reply("lookup", '{"key": "port"}'), reply("It is 5432."))

    def conversation(model: ModelClient) -> list[str | None]:
        first = model.complete(HI, tools)
        messages: list[dict[str, Any]] = [
            *HI,
            {"role": "assistant", "content": first.content, "tool_calls": first.tool_calls},
            {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "5432"},
        ]
        return [
            first.tool_calls[0]["function"]["arguments"],
            model.complete(messages, tools).content,
        ]

    recorded = conversation(client(openai_server.url, tmp_path))
    replayer = client("http://127.0.0.1:9/v1", tmp_path, "none")
    assert conversation(replayer) == recorded == ['{"key": "port"}', "It is 5432."]
    assert replayer.calls == 0


def test_mock_models_are_never_recorded(tmp_path: Path) -> None:
    model = ModelClient("ctxeval/echo", cassettes=CassetteStore(tmp_path, "none"))
    assert model.complete(HI).content  # no miss error either: mocks bypass cassettes
    assert list(tmp_path.iterdir()) == []


def test_corrupt_cassette_is_a_clear_error(tmp_path: Path) -> None:
    key = request_hash(build_request("openai/test-model", HI, None, {"temperature": 0.0}))
    (tmp_path / f"{key[:16]}.json").write_text("{half a file", encoding="utf-8")
    with pytest.raises(ModelError, match=r"cassette .*\.json is not valid JSON"):
        client("http://127.0.0.1:9/v1", tmp_path, "none").complete(HI)


def test_api_key_from_argument_or_environment_never_reaches_a_cassette(
    openai_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.script(reply("a"), reply("b"))
    client(openai_server.url, tmp_path / "arg", api_key=SECRET).complete(HI)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client(openai_server.url, tmp_path / "env").complete(HI)
    # Both keys really were used (sent to the server)...
    sent = [r.headers.get("authorization") for r in openai_server.chat_requests]
    assert sent == [f"Bearer {SECRET}"] * 2
    # ...and neither was written.
    files = cassette_files(tmp_path / "arg") + cassette_files(tmp_path / "env")
    assert len(files) == 2
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert SECRET not in text and "authorization" not in text.lower()
        assert "api_key" not in text and openai_server.url not in text


# --- through the plugin ----------------------------------------------------------

SCENARIO_YAML = ops_scenario(
    "ports",
    '{id: port, user: "Which port does the database use?", expect: {contains: asked}}',
    '{id: window, user: "When is the deploy window?", expect: {contains: asked}}',
)


def run_plugin(pytester: pytest.Pytester, api_base: str, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"scenarios/ports": SCENARIO_YAML})
    return pytester.runpytest(
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={api_base}",
        "--ctx-strategy=full,headtail",
        "--ctx-cassettes=cassettes",
        "--ctx-report=out/report.html",
        *args,
    )


def answers(path: Path) -> dict[str, tuple[Any, ...]]:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {
        r["nodeid"]: (r["verdict"], r["answer"], r["ground_truth_answer"], r["prompt_tokens"])
        for r in records
    }


def test_plugin_records_then_replays_with_the_server_gone(
    pytester: pytest.Pytester, xdist_args: tuple[str, ...]
) -> None:
    recording_server = FakeOpenAIServer().start()
    try:
        run_plugin(
            pytester, recording_server.url, "--ctx-results=first.jsonl", *xdist_args
        ).assert_outcomes(passed=4)
        assert recording_server.chat_requests
    finally:
        recording_server.stop()
    files = cassette_files(pytester.path / "cassettes")
    assert files

    # A different server counts requests: replay-only must send none.
    counting_server = FakeOpenAIServer().start()
    try:
        result = run_plugin(
            pytester,
            counting_server.url,
            "--ctx-record=none",
            "--ctx-results=again.jsonl",
            *xdist_args,
        )
        result.assert_outcomes(passed=4)
        assert counting_server.chat_requests == []
    finally:
        counting_server.stop()
    assert answers(pytester.path / "first.jsonl") == answers(pytester.path / "again.jsonl")
    assert cassette_files(pytester.path / "cassettes") == files


def test_plugin_record_none_miss_is_an_error_naming_the_item(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    result = run_plugin(
        pytester, openai_server.url, "--ctx-record=none", "--ctx-results=r.jsonl", "-p", "no:xdist"
    )
    result.assert_outcomes(failed=4)
    assert openai_server.chat_requests == []
    result.stdout.fnmatch_lines(
        [
            "*error: model error: no recorded response for request * of model 'openai/test-model' "
            "(scenario 'ports', strategy 'headtail', probe 'window'); expected *cassettes*.json*"
        ]
    )
    records = [json.loads(line) for line in (pytester.path / "r.jsonl").read_text().splitlines()]
    assert {(r["verdict"], r["classification"]) for r in records} == {("error", "error")}
    assert (pytester.path / "out/report.html").exists()


def test_plugin_never_writes_the_api_key(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    run_plugin(
        pytester, openai_server.url, "--ctx-results=out/results.jsonl", "-p", "no:xdist"
    ).assert_outcomes(passed=4)
    assert {r.headers.get("authorization") for r in openai_server.chat_requests} == {
        f"Bearer {SECRET}"
    }
    written = [p for p in (pytester.path / "cassettes").rglob("*") if p.is_file()]
    written += [p for p in (pytester.path / "out").rglob("*") if p.is_file()]
    assert {p.suffix for p in written} >= {".json", ".jsonl", ".html"}
    for path in written:
        assert SECRET not in path.read_text(encoding="utf-8"), path


def test_mock_model_runs_write_no_cassettes(pytester: pytest.Pytester) -> None:
    oracle_yaml = ops_scenario(
        "ports",
        '{id: port, user: "Which port does the database use?", expect: {contains: "5432"}}',
        '{id: window, user: "When is the deploy window?", expect: {contains: Tuesday}}',
    )
    pytester.makefile(".yaml", **{"scenarios/ports": oracle_yaml})
    # summarize also calls the model from inside the strategy.
    result = pytester.runpytest(
        "--ctx-strategy=full,summarize",
        "--ctx-cassettes=cassettes",
        "--ctx-record=none",
        "-p",
        "no:xdist",
    )
    result.assert_outcomes(passed=4)
    assert not (pytester.path / "cassettes").exists()


def test_bad_record_mode_is_a_usage_error_quoting_the_value(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--ctx-record=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--ctx-record: invalid value 'sometimes'; expected one of: none, new, all*"]
    )


def test_record_and_cassettes_ini_twins(
    pytester: pytest.Pytester, openai_server: FakeOpenAIServer
) -> None:
    pytester.makeini("[pytest]\nctx_record = none\nctx_cassettes = from-ini\n")
    pytester.makefile(".yaml", **{"scenarios/ports": SCENARIO_YAML})
    base = [
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={openai_server.url}",
        "-p",
        "no:xdist",
    ]
    # ini says replay-only: every item misses, nothing is sent.
    result = pytester.runpytest(*base, "--ctx-strategy=full")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*expected *from-ini*"])
    assert openai_server.chat_requests == []
    # The option wins over the ini.
    pytester.runpytest(*base, "--ctx-strategy=full", "--ctx-record=new").assert_outcomes(passed=2)
    assert cassette_files(pytester.path / "from-ini")
