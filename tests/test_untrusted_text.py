"""Untrusted text never crashes an item or loses a record.

Answers and cassettes come from outside: an answer may be megabytes long,
nest code deeper than the parser goes, or make a regex backtrack for ever;
a cassette may be cut off or hand-edited to the wrong types.  Each becomes
that item's verdict or `error` record, and the run goes on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, assert_no_traceback, output
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    echo_responder,
    last_user_text,
    malformed_reply,
    ops_scenario,
    reply,
)

from pytest_ctxeval.evaluate import regex_budget
from pytest_ctxeval.evaluate.code_checks import MAX_CODE_CHARS, check_python
from pytest_ctxeval.evaluate.judge import parse_verdict
from pytest_ctxeval.evaluate.scoring import check_answer
from pytest_ctxeval.evaluate.uncheckable import UncheckableAnswer
from pytest_ctxeval.llm.cassettes import CassetteStore, build_request, request_hash
from pytest_ctxeval.llm.client import MAX_ANSWER_CHARS, ModelClient, ModelError
from pytest_ctxeval.results.record import MAX_RECORD_ANSWER_CHARS, ResultRecord, sealed
from pytest_ctxeval.scenario.schema import Expectation, PythonCheck
from pytest_ctxeval.textcap import cap_text

HI = [{"role": "user", "content": "Which port?"}]
MODEL = "openai/test-model"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def run(ctx: CtxProject, server_url: str, *args: str) -> pytest.RunResult:
    return ctx.run(f"--ctx-model={MODEL}", f"--ctx-api-base={server_url}", "-p", "no:xdist", *args)


def by_probe(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["probe"], r["strategy"]): r for r in records}


def answering(marker: str, answer: str) -> Callable[[dict[str, Any]], Reply]:
    """A responder that gives ``answer`` to questions containing ``marker``."""

    def respond(body: dict[str, Any]) -> Reply:
        if marker in last_user_text(body):
            return reply(answer)
        return echo_responder(body)

    return respond


# --- code checks ----------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "-" * 60_000 + "1",  # MemoryError in the parser
        "not " * 20_000 + "x",  # MemoryError
        "1" + "+1" * 40_000,  # RecursionError
    ],
    ids=["unary-minus", "not-chain", "long-sum"],
)
def test_code_the_parser_gives_up_on_is_code_that_does_not_parse(code: str) -> None:
    check = PythonCheck(forbid_imports=["requests"])
    assert check_python(code, check) == ["contains Python code that parses"]


def test_code_longer_than_code_checks_read_is_uncheckable() -> None:
    code = "import os\n" + "x = 1\n" * (MAX_CODE_CHARS // 6 + 1)
    with pytest.raises(UncheckableAnswer, match=r"the answer's code is [\d,]+ chars, more than"):
        check_python(code, PythonCheck(require_imports=["os"]))


def test_an_answer_that_breaks_the_parser_keeps_every_record(
    ctx: CtxProject, server: FakeOpenAIServer
) -> None:
    server.responder = answering("NESTED", "-" * 90_000 + "1")  # under MAX_CODE_CHARS
    ctx.scenario(
        "code",
        ops_scenario(
            "code",
            '{id: nested, user: "NESTED Write the client.", '
            "expect: {python: {forbid_imports: [requests]}}}",
            '{id: port, user: "Which port?", expect: {contains: asked}}',
        ),
    )
    result = run(ctx, server.url, "--ctx-strategy=full,headtail")
    records = by_probe(ctx.results())
    assert len(records) == 4  # before: the parser's MemoryError lost two of them
    for strategy in ("full", "headtail"):
        nested = records[("nested", strategy)]
        # Both sides' code fails to parse, as it would in Python itself.
        assert nested["failed_checks"] == ["contains Python code that parses"]
        assert nested["classification"] == "model_miss"
        assert records[("port", strategy)]["classification"] == "ok"
    assert_no_traceback(result)


# --- answer size ----------------------------------------------------------------


def test_a_huge_answer_is_capped_in_the_record_and_scores_alike_on_replay(
    ctx: CtxProject, server: FakeOpenAIServer
) -> None:
    huge = "```python\nimport os\n" + "# filler line\n" * 400_000 + "```"  # 5.6 MB
    server.responder = answering("HUGE", huge)
    ctx.scenario(
        "big",
        ops_scenario(
            "big",
            '{id: code, user: "HUGE Write the client.", expect: {python: {require_imports: [os]}}}',
            '{id: text, user: "HUGE Say it all.", expect: {contains: filler}}',
            '{id: port, user: "Which port?", expect: {contains: asked}}',
        ),
    )
    live = run(ctx, server.url, "--ctx-strategy=full", "--ctx-cassettes=cassettes")
    records = by_probe(ctx.results())
    assert len(records) == 3
    code, text = records[("code", "full")], records[("text", "full")]
    # Scoring read the first MAX_ANSWER_CHARS: the fence never closes there,
    # so all of it is code, more than a code check reads: an error, not a crash.
    assert code["classification"] == "error"
    assert code["error"].startswith(
        "cannot score the strategy's answer: python check: the answer's code is "
    )
    assert text["classification"] == "ok"
    for record in (code, text):
        for answer in (record["answer"], record["ground_truth_answer"]):
            assert answer.startswith("```python\nimport os\n# filler line\n")
            assert answer.endswith(f"\n… [truncated: {len(huge):,} chars]")
            assert len(answer) < MAX_RECORD_ANSWER_CHARS + 64
    assert records[("port", "full")]["classification"] == "ok"
    assert_no_traceback(live)

    # The cassette keeps what was scored (bounded), so a replay scores the same.
    sizes = [p.stat().st_size for p in (ctx.path / "cassettes").glob("*.json")]
    assert max(sizes) < 2 * MAX_ANSWER_CHARS
    server.stop()
    run(
        ctx,
        "http://127.0.0.1:9/v1",
        "--ctx-strategy=full",
        "--ctx-cassettes=cassettes",
        "--ctx-record=none",
        "--ctx-results=replay.jsonl",
    )
    replayed = by_probe(ctx.results("replay.jsonl"))
    for key, record in records.items():
        for volatile in ("run_id", "started_at", "latency_s"):
            record.pop(volatile)
            replayed[key].pop(volatile)
        assert replayed[key] == record


def test_capping_is_idempotent_and_names_the_original_length() -> None:
    text = "x" * 300_000
    once = cap_text(text, 200_000)
    assert once.endswith("\n… [truncated: 300,000 chars]") and once.startswith("x" * 200_000)
    assert cap_text(once, 200_000) == once  # a replayed cassette is not capped again
    assert cap_text(once, 20).endswith("x" * 20 + "\n… [truncated: 300,000 chars]")
    assert cap_text("short", 20) == "short" and cap_text(None, 20) is None


def test_only_a_marker_at_the_end_names_an_original_length() -> None:
    # A text that quotes a marker mid-way was never capped: its own length counts.
    quoted = "see \n… [truncated: 9,999,999 chars] above " + "y" * 500
    assert cap_text(quoted, 20) == quoted[:20] + f"\n… [truncated: {len(quoted)} chars]"
    capped_twice = cap_text(cap_text("z" * 1_234_567, 300), 10)
    assert capped_twice == "z" * 10 + "\n… [truncated: 1,234,567 chars]"


def test_a_sealed_record_caps_every_answer_text() -> None:
    long = "word " * 10_000
    record = ResultRecord(
        scenario="s",
        strategy="full",
        model=MODEL,
        probe="p",
        verdict="pass",
        classification="ok",
        answer=long,
        ground_truth_answer=long,
        answers=[long, "short"],
        ground_truth_answers=[long],
        error="e" * 50_000,
    )
    kept = sealed(record)
    shown = [kept.answer, kept.ground_truth_answer, *(kept.answers or [])]
    shown += kept.ground_truth_answers or []
    assert shown[3] == "short"
    for text in (shown[0], shown[1], shown[2], shown[4]):
        assert text is not None and text.endswith("[truncated: 50,000 chars]")
        assert len(text) < MAX_RECORD_ANSWER_CHARS + 64
    assert kept.error is not None and len(kept.error) < 5_000


# --- regexes ----------------------------------------------------------------------


def test_regexes_keep_their_re_meaning() -> None:
    def failed(answer: str, **expect: Any) -> list[str]:
        return check_answer(answer, Expectation.model_validate(expect))

    assert failed("Port 5432", regex=r"port \d{4}\b") == []  # ignores case by default
    assert failed("Port 5432", regex=r"port \d{4}", case_sensitive=True) == [
        r"matches /port \d{4}/"
    ]
    assert failed("Café ouvert", regex=r"^\w+ \w+$") == []  # \w is Unicode
    assert failed("uses requests", not_regex=r"(?-i:Requests)") == []  # inline flags
    assert failed("a\nb", regex=r"^b$") == ["matches /^b$/"]  # no MULTILINE unless asked
    assert failed("a\nb", regex=r"(?m)^b$") == []


def test_a_regex_that_runs_too_long_is_that_items_error_and_the_run_goes_on(
    ctx: CtxProject, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex_budget, "REGEX_TIMEOUT_S", 0.2)
    server.responder = answering("GREEDY", "a" * 30 + "!")
    ctx.scenario(
        "regex",
        ops_scenario(
            "regex",
            '{id: greedy, user: "GREEDY Say a.", expect: {regex: "(a|a)+$"}}',
            '{id: port, user: "Which port?", expect: {regex: "asked"}}',
        ),
    )
    started = time.perf_counter()
    result = run(ctx, server.url, "--ctx-strategy=full")
    assert time.perf_counter() - started < 30  # `re` would take minutes on this pattern
    records = by_probe(ctx.results())
    greedy = records[("greedy", "full")]
    assert (greedy["verdict"], greedy["classification"]) == ("error", "error")
    assert greedy["error"] == (
        "cannot score the strategy's answer: regex /(a|a)+$/ took longer than its "
        "0.2 s limit on a 31-char answer"
    )
    assert records[("port", "full")]["classification"] == "ok"
    result.assert_outcomes(passed=1, failed=1)
    assert_no_traceback(result)


# --- the judge's reply -------------------------------------------------------------


def test_a_judge_reply_of_many_braces_is_parsed_in_linear_time() -> None:
    started = time.perf_counter()
    assert parse_verdict("{" * 200_000) is None  # the old regex took ~12 s
    assert time.perf_counter() - started < 2.0
    assert parse_verdict('I compared them. {"agrees": true, "reason": "same port"}') == (
        True,
        "same port",
    )


# --- malformed answers from a live server ------------------------------------------


# litellm warns while it serializes the malformed message; the warning is its own.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_a_live_answer_with_fields_of_the_wrong_type_is_a_model_error(
    server: FakeOpenAIServer,
) -> None:
    call = {"id": 5, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    server.script(malformed_reply(tool_calls=[call]))
    with pytest.raises(ModelError) as excinfo:
        ModelClient(MODEL, api_base=server.url, backoff_s=0.01).complete(HI)
    assert str(excinfo.value) == (
        "malformed response from openai/test-model: "
        "response.tool_calls[0].id is a number (5), expected a string"
    )


# litellm warns while it serializes the malformed message; the warning is its own.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_a_live_answer_litellm_cannot_read_is_one_line_without_a_traceback(
    server: FakeOpenAIServer,
) -> None:
    server.script(*[malformed_reply(content=5)] * 2)
    with pytest.raises(ModelError) as excinfo:
        ModelClient(MODEL, api_base=server.url, backoff_s=0.01, max_attempts=2).complete(HI)
    assert str(excinfo.value) == "InternalServerError after 2 attempts: Invalid response object"


# --- cassettes ---------------------------------------------------------------------


def cassette_path(directory: Path, messages: list[dict[str, Any]] = HI) -> Path:
    key = request_hash(build_request(MODEL, messages, None, {"temperature": 0.0}))
    return CassetteStore(directory).path_for(key)


def write_cassette(directory: Path, response: Any) -> Path:
    path = cassette_path(directory)
    key = request_hash(build_request(MODEL, HI, None, {"temperature": 0.0}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": 1, "key": key, "response": response}), "utf-8")
    return path


def replayer(directory: Path, mode: str = "none") -> ModelClient:
    store = CassetteStore(directory, mode)  # type: ignore[arg-type]
    return ModelClient(MODEL, api_base="http://127.0.0.1:9/v1", cassettes=store)


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        ({"content": 5}, "response.content is a number (5), expected a string or null"),
        ({"content": ["a", "b"]}, "response.content is a list, expected a string or null"),
        ("just text", "response is a string, expected an object"),
        ({"content": "ok", "tool_calls": "none"}, "response.tool_calls is a string"),
        (
            {"content": None, "tool_calls": [{"id": "c1", "function": {"name": 7}}]},
            "response.tool_calls[0].function.name is a number (7), expected a string",
        ),
        (
            {"content": "ok", "usage": {"prompt_tokens": "many"}},
            "response.usage.prompt_tokens is a string, expected a whole number or null",
        ),
        ({"content": "ok", "finish_reason": True}, "response.finish_reason is a boolean (true)"),
    ],
)
@pytest.mark.parametrize("mode", ["none", "new"])
def test_a_cassette_with_fields_of_the_wrong_type_is_an_error_naming_file_and_field(
    tmp_path: Path, response: Any, problem: str, mode: str
) -> None:
    path = write_cassette(tmp_path, response)
    with pytest.raises(ModelError) as excinfo:
        replayer(tmp_path, mode).complete(HI)
    assert str(excinfo.value).startswith(f"cassette {path}: {problem}")


def test_a_cut_off_cassette_is_recorded_again_under_new(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    path = cassette_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": 1, "key": "0123', encoding="utf-8")  # cut mid-write
    server.script(reply("Port 5432."))
    store = CassetteStore(tmp_path, "new")
    model = ModelClient(MODEL, api_base=server.url, cassettes=store)
    assert model.complete(HI).content == "Port 5432."
    assert len(server.chat_requests) == 1
    assert json.loads(path.read_text(encoding="utf-8"))["response"]["content"] == "Port 5432."
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_cut_off_cassette_under_none_names_the_file(tmp_path: Path) -> None:
    path = cassette_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")
    with pytest.raises(ModelError) as excinfo:
        replayer(tmp_path).complete(HI)
    assert str(excinfo.value).startswith(f"cassette {path} is not valid JSON (")
    assert str(excinfo.value).endswith("record it again with --ctx-record=new")


def test_a_hand_edited_cassette_is_that_items_error_through_the_plugin(
    ctx: CtxProject, server: FakeOpenAIServer
) -> None:
    ctx.scenario(
        "ports",
        ops_scenario(
            "ports",
            '{id: port, user: "Which port does the database use?", expect: {contains: asked}}',
            '{id: window, user: "When is the deploy window?", expect: {contains: asked}}',
        ),
    )
    run(ctx, server.url, "--ctx-strategy=full", "--ctx-cassettes=cassettes").assert_outcomes(
        passed=2
    )
    edited = next(
        path
        for path in (ctx.path / "cassettes").glob("*.json")
        if "deploy" in json.loads(path.read_text(encoding="utf-8"))["response"]["content"]
    )
    data = json.loads(edited.read_text(encoding="utf-8"))
    data["response"]["content"] = 42
    edited.write_text(json.dumps(data), encoding="utf-8")

    result = run(
        ctx, server.url, "--ctx-strategy=full", "--ctx-cassettes=cassettes", "--ctx-record=none"
    )
    result.assert_outcomes(passed=1, failed=1)
    records = by_probe(ctx.results())
    assert records[("port", "full")]["classification"] == "ok"
    window = records[("window", "full")]
    assert window["classification"] == "error"
    assert window["error"] == (
        f"model error: cassette {edited}: response.content is a number (42), expected a "
        "string or null; fix the file, or delete it to record it again"
    )
    assert "AttributeError" not in output(result)
    assert_no_traceback(result)


# --- whatever scoring raises stays with its item ------------------------------------

BOOM_YAML = ops_scenario(
    "boom",
    '{id: boom, user: "BOOM Which port?", expect: {contains: "5432"}}',
    '{id: port, user: "Which port?", expect: {contains: asked}}',
)


def boom_or_echo(body: dict[str, Any]) -> Reply:
    if "BOOM" not in last_user_text(body):
        return echo_responder(body)
    # The whole chat (system, four turns, the question) or a strategy's window.
    side = "full" if len(body["messages"]) >= 6 else "window"
    return reply(f"BOOM {side}: port 5432")


def test_an_exception_scoring_one_answer_is_that_items_error(
    ctx: CtxProject, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.evaluate import finishing

    def explodes_on_the_full_answer(
        answer: str | None, expect: Expectation, question: str = ""
    ) -> list[str]:
        if answer is not None and answer.startswith("BOOM full"):
            raise MemoryError("no memory left for this answer")
        return check_answer(answer, expect, question)

    monkeypatch.setattr(finishing, "check_answer", explodes_on_the_full_answer)
    server.responder = boom_or_echo
    ctx.scenario("boom", BOOM_YAML)
    ctx.write("strategies/sliding-1.yaml", "name: sliding-1\nkind: sliding\nparams: {turns: 1}\n")
    result = run(ctx, server.url, "--ctx-strategy=sliding-1")
    records = by_probe(ctx.results())
    assert len(records) == 2  # before: the exception lost both
    boom = records[("boom", "sliding-1")]
    # The strategy's answer had passed; nothing of that half-finished verdict stays.
    assert (boom["verdict"], boom["classification"], boom["pass_rate"]) == ("error", "error", None)
    assert boom["error"] == "scoring raised MemoryError: no memory left for this answer"
    assert records[("port", "sliding-1")]["verdict"] == "pass"
    assert_no_traceback(result)


def test_an_exception_outside_any_one_answer_still_gives_each_item_a_record(
    ctx: CtxProject, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.evaluate import preparing

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("fact survival broke")

    monkeypatch.setattr(preparing, "fact_survival", broken)
    ctx.scenario("boom", BOOM_YAML)
    result = run(ctx, server.url, "--ctx-strategy=full")
    records = by_probe(ctx.results())
    assert {key: r["error"] for key, r in records.items()} == {
        ("boom", "full"): "evaluating the probe raised RuntimeError: fact survival broke",
        ("port", "full"): "evaluating the probe raised RuntimeError: fact survival broke",
    }
    result.assert_outcomes(failed=2)
    assert_no_traceback(result)


def test_an_exception_reading_one_judges_reply_is_that_items_error(
    ctx: CtxProject, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.evaluate import judge

    read = judge.parse_verdict

    def explodes_on_boom(reply_text: str) -> tuple[bool, str] | None:
        if "BOOM" in reply_text:
            raise RecursionError("the reply nests too deep")
        return read(reply_text)

    def judges(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["content"] != judge.SYSTEM:
            return echo_responder(body)
        verdict = '{"agrees": true, "reason": "same"}'
        return reply(("BOOM " if "BOOM" in last_user_text(body) else "") + verdict)

    monkeypatch.setattr(judge, "parse_verdict", explodes_on_boom)
    server.responder = judges
    ctx.scenario(
        "judged",
        ops_scenario(
            "judged", '{id: boom, user: "BOOM Which port?"}', '{id: port, user: "Which port?"}'
        ),
    )
    result = run(ctx, server.url, "--ctx-strategy=full", "--ctx-judge=openai/test-model")
    records = by_probe(ctx.results())
    assert records[("boom", "full")]["error"] == (
        "judge 'openai/test-model': judge raised RecursionError: the reply nests too deep"
    )
    assert records[("port", "full")]["judge"] == {
        "model": "openai/test-model",
        "agrees": True,
        "reason": "same",
    }
    assert_no_traceback(result)
