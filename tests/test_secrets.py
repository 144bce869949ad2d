"""Secrets never leak: a key that a server echoes in an error body, or that a
model repeats in its answer, is scrubbed before anything is stored (record,
results.jsonl, report, cassette), shown (terminal) or raised (ModelError)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, output
from fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    echo_responder,
    echoing_error,
    echoing_reply,
    last_user_text,
    ops_scenario,
    reply,
    tool_call_reply,
)

from pytest_ctxeval.llm.cassettes import CassetteStore
from pytest_ctxeval.llm.client import ModelClient, ModelError
from pytest_ctxeval.redact import REDACTED, needs_scrub, scrub, scrub_data, scrub_json
from pytest_ctxeval.report.page_data import unpacked_text
from pytest_ctxeval.results.record import ResultRecord, sealed
from pytest_ctxeval.results.store import ResultWriter

PLANTED = "sk-test-planted-123456789"
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


# --- scrub ------------------------------------------------------------------------


def test_values_of_key_like_environment_variables_are_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secrets = {
        "ACME_API_KEY": "acme-0000-1111",
        "GITHUB_TOKEN": "ghp_abcdefgh12345678",
        "DB_PASSWORD": "hunter2hunter2",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "MYAPIKEY": "plainvalue99",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    text = " | ".join(secrets.values())
    assert scrub(text) == " | ".join([REDACTED] * len(secrets))


def test_ordinary_variables_and_short_values_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEPLOY_REGION", "eu-central-1")  # not a key-like name
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/var/cache/tiktoken")  # "TOKEN" inside a word
    monkeypatch.setenv("SHORT_TOKEN", "abc123")  # under 8 chars: would scrub words
    monkeypatch.setenv("SIGNING_KEY", "/etc/keys/signing.pem")  # where a key is, not a key
    text = "eu-central-1 /var/cache/tiktoken abc123 /etc/keys/signing.pem"
    assert scrub(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer xyz", f"Authorization: Bearer {REDACTED}"),
        ('{"authorization": "Bearer abc.def"}', f'{{"authorization": "Bearer {REDACTED}"}}'),
        ("use Bearer eyJhbGciOiJIUzI1NiJ9.e30 here", f"use Bearer {REDACTED} here"),
        ("key sk-proj-AbCdEf0123456789xyz ok", f"key {REDACTED} ok"),
        ("x-api-key: 0123456789abcdef0123", f"x-api-key: {REDACTED}"),
        # Prose that only looks like it is kept.
        ("Bearer authentication is common", "Bearer authentication is common"),
        ("pip install sk-learn", "pip install sk-learn"),
        ("api_key = os.environ['KEY']", "api_key = os.environ['KEY']"),
    ],
)
def test_bearer_tokens_and_provider_keys_are_scrubbed_by_shape(text: str, expected: str) -> None:
    assert scrub(text) == expected


def test_an_explicit_api_key_is_scrubbed_once_a_client_has_it() -> None:
    key = "explicit-key-f00dfeed"
    assert scrub(f"key {key}") == f"key {key}"
    ModelClient("openai/test-model", api_key=key)
    assert scrub(f"key {key}") == f"key {REDACTED}"


def test_scrub_data_reaches_every_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    data = {"a": [PLANTED, {"b": (1, f"x {PLANTED}")}], PLANTED: None}
    assert scrub_data(data) == {"a": [REDACTED, {"b": (1, f"x {REDACTED}")}], REDACTED: None}


# --- the quick look: a record with no secret is not walked -------------------------

# A key in the environment whose value JSON writes escaped.
ESCAPED_KEY = 'ab"c\\d\nef\u00e9gh'
# Shapes spelled with the characters beyond ASCII that re takes for i, s and k.
LOOKALIKE_SECRETS = [
    "authorization: abcdefgh".replace("i", "\u0131", 1),
    "AUTHORIZATION: abcdefgh".replace("I", "\u0130", 1),
    "api_\u212aey=ABCDEFGHIJKLMNOPQRS",
]
# Keys by their shape alone (in no variable): hidden in errors, not in answers.
SHAPED_TEXTS = [
    "Authorization: Bearer xyz",
    "use Bearer eyJhbGciOiJIUzI1NiJ9.e30 here",
    "key sk-proj-AbCdEf0123456789xyz ok",
    "X-API-KEY: 0123456789abcdef0123",
    *LOOKALIKE_SECRETS,
]
# Values of the environment: hidden everywhere.
KNOWN_TEXTS = [f"the key was {PLANTED}", f"escaped {ESCAPED_KEY} too"]


def _nested(text: str) -> dict[str, Any]:
    return {"answer": "fine", "window": [{"role": "user", "content": text}], text: (1, text)}


def test_scrub_json_writes_what_scrubbing_then_json_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("ACME_API_KEY", ESCAPED_KEY)
    for text in KNOWN_TEXTS:
        data = _nested(text)
        assert needs_scrub(data), text
        written = scrub_json(data)
        assert written == json.dumps(scrub_data(data), sort_keys=True, ensure_ascii=False)
        assert REDACTED in written, text
    # What only looks like a key is stored as it is: a scenario may plant it.
    for text in [*SHAPED_TEXTS, "The build failed again \u2014 caf\u00e9 \u201cquotes\u201d"]:
        data = _nested(text)
        assert not needs_scrub(data), text
        assert scrub_json(data) == json.dumps(data, sort_keys=True, ensure_ascii=False)


def test_a_sealed_record_is_scrubbed_only_where_a_secret_may_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_API_KEY", ESCAPED_KEY)
    fields = {"scenario": "s", "strategy": "full", "model": "m", "probe": "p", "verdict": "pass"}
    fields["classification"] = "ok"
    clean = ResultRecord(**fields, answer="Input B is the CSV export.")
    assert sealed(clean) == clean
    leaky = ResultRecord(**fields, answer=f"escaped {ESCAPED_KEY} too")
    assert REDACTED in sealed(leaky).answer
    for text in SHAPED_TEXTS:
        planted = ResultRecord(**fields, answer=text)  # an answer is shown as scored
        assert sealed(planted).answer == text
        failed = ResultRecord(**fields, error=f"server said: {text}")  # an error loses it
        assert REDACTED in (sealed(failed).error or ""), text


def test_a_records_line_is_pydantics_json_dump_and_sealing_copies_what_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_ctxeval.results.store import record_json

    monkeypatch.setenv("ACME_API_KEY", ESCAPED_KEY)
    fields = {"scenario": "s", "strategy": "full", "model": "m", "probe": "p", "verdict": "pass"}
    judge = {"score": 1.0, "reason": "x" * 20_000}
    record = ResultRecord(
        **fields,
        classification="ok",
        pass_rate_interval=(0.5, 1.0),
        cost_usd=float("inf"),
        judge=judge,
        window_trace=[{"role": "user", "state": "kept", "tokens": 3}],
        fact_ledger={"f": [["verbatim", 2]]},  # an extra
        counts={1: (1, 2)},  # an extra JSON writes with a string key
    )
    pydantic = scrub_json(record.model_dump(mode="json"))
    assert record_json(record) == pydantic
    record.seen = {"a"}  # a set: written through pydantic's dump
    assert json.loads(record_json(record))["seen"] == ["a"]
    leaky = ResultRecord(**fields, classification="ok", answer=f"key {ESCAPED_KEY}")
    assert ESCAPED_KEY not in record_json(leaky)
    out = sealed(record)
    assert len(out.judge["reason"]) < len(judge["reason"])  # capped in the sealed record
    assert len(record.judge["reason"]) == 20_000  # not in the original record


def test_the_lookalike_letters_are_all_that_re_takes_for_ascii_letters() -> None:
    """The quick look folds these four to ASCII before it searches; a fifth
    that re, ignoring case, matched to a letter would slip past it."""
    from pytest_ctxeval.redact import _LETTER_LOOKALIKES

    letter = re.compile(r"(?i)[a-z]")
    beyond_ascii = (chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert {char for char in beyond_ascii if letter.fullmatch(char)} == set(_LETTER_LOOKALIKES)
    for char, folded in _LETTER_LOOKALIKES.items():
        assert re.fullmatch(f"(?i){folded}", char)


_FRAGMENTS = [
    *"authorization Authorization AUTHOR\u0130ZATION author\u0131zation".split(),
    *"Bearer bearer BEARER sk- \u017fk- api_key API-KEY apikey api_\u212aey x-api-key".split(),
    *"0123456789abcdef ABCDEFGHIJ xyz caf\u00e9 \u2028 task s k . - = ' \\".split(" "),
    ": ",
    " ",
    '"',
    "\n",
    PLANTED,
    ESCAPED_KEY,
    ESCAPED_KEY[:5],
]


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(0, 6)))


def _random_data(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.random()
    if depth > 2 or kind < 0.4:
        return _random_text(rng) if rng.random() < 0.8 else rng.choice([1, 2.5, None, True])
    if kind < 0.7:
        return [_random_data(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_random_text(rng): _random_data(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def test_needs_scrub_is_false_only_when_scrubbing_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    monkeypatch.setenv("ACME_API_KEY", ESCAPED_KEY)
    rng = random.Random(14)
    skipped = scrubbed = 0
    for _ in range(4000):
        data = _random_data(rng)
        if needs_scrub(data):
            scrubbed += scrub_data(data) != data
        else:
            assert scrub_data(data) == data, data
            skipped += 1
    assert skipped > 500 and scrubbed > 500  # both sides were really tried


# --- the client -------------------------------------------------------------------


def test_a_server_echoing_the_key_in_an_error_raises_no_key(server: FakeOpenAIServer) -> None:
    key = "explicit-key-0123456789"
    server.script(echoing_error(401))
    client = ModelClient("openai/test-model", api_base=server.url, api_key=key, backoff_s=0.01)
    with pytest.raises(ModelError) as excinfo:
        client.complete(HI)
    assert server.chat_requests[0].headers.get("authorization") == f"Bearer {key}"
    error = excinfo.value
    # A refused key on the first call stops the run: the line says what to check.
    assert str(error).startswith(f"openai/test-model at {server.url}: the server refused the")
    assert str(error).endswith(
        ". It said: AuthenticationError: Incorrect API key provided: "
        f"Authorization: Bearer {REDACTED}"
    )
    # Nor in the exception it was raised from, which a traceback would print.
    assert error.__cause__ is None and error.__suppress_context__


def test_an_answer_repeating_the_key_is_scrubbed(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    server.script(echoing_reply())
    answer = ModelClient("openai/test-model", api_base=server.url).complete(HI).content
    assert answer == f"Sure. The request came with Authorization: Bearer {REDACTED}."


def test_tool_call_arguments_repeating_the_key_are_scrubbed(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    server.script(tool_call_reply("login", f'{{"token": "{PLANTED}"}}'))
    calls = ModelClient("openai/test-model", api_base=server.url).complete(HI).tool_calls
    assert calls[0]["function"]["arguments"] == f'{{"token": "{REDACTED}"}}'


def test_a_key_in_the_request_is_not_written_to_its_cassette(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An imported transcript may hold the user's key in a turn.
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    server.script(reply("Noted."))
    turn = [{"role": "user", "content": f"my key is {PLANTED}"}]
    store = CassetteStore(tmp_path, "new")
    ModelClient("openai/test-model", api_base=server.url, cassettes=store).complete(turn)
    [path] = tmp_path.glob("*.json")
    assert PLANTED not in path.read_text(encoding="utf-8")
    # The key of the request is its unscrubbed hash: it still replays.
    replayer = ModelClient("openai/test-model", cassettes=CassetteStore(tmp_path, "none"))
    assert replayer.complete(turn).content == "Noted."


def test_the_results_file_is_scrubbed_whoever_built_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    record = ResultRecord(
        scenario="s",
        strategy="full",
        model="openai/test-model",
        probe="p",
        verdict="error",
        classification="error",
        error=f"proxy said: {PLANTED}",
    )
    writer = ResultWriter(tmp_path / "results.jsonl")
    writer.write(record)
    writer.close()
    text = (tmp_path / "results.jsonl").read_text(encoding="utf-8")
    assert PLANTED not in text and f"proxy said: {REDACTED}" in text


# --- through the plugin ------------------------------------------------------------

LEAKY_YAML = ops_scenario(
    "leaky",
    '{id: echo, user: "ECHO Which port?", expect: {contains: "5432"}}',
    '{id: denied, user: "DENIED Which port?", expect: {contains: "5432"}}',
    '{id: plain, user: "When is the deploy window?", expect: {contains: Tuesday}}',
)


def leaky(body: dict[str, Any]) -> Reply:
    question = last_user_text(body)
    if question.startswith("ECHO"):
        return echoing_reply()
    if question.startswith("DENIED"):
        # Not a 401: a refused key on the first calls stops the run (see test_model_health).
        return echoing_error(400)
    return echo_responder(body)


def test_a_planted_key_appears_in_no_file_and_no_output(
    ctx: CtxProject,
    server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    xdist_args: tuple[str, ...],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    server.responder = leaky
    ctx.scenario("leaky", LEAKY_YAML)
    result = ctx.run(
        "--ctx-model=openai/test-model",
        f"--ctx-api-base={server.url}",
        "--ctx-strategy=full,headtail",
        "--ctx-cassettes=cassettes",
        "--ctx-results=out/results.jsonl",
        "--ctx-report=out/report.html",
        "-rA",
        *xdist_args,
    )
    # The key really went out, and came back in both an error and an answer.
    assert {r.headers.get("authorization") for r in server.chat_requests} == {f"Bearer {PLANTED}"}
    records = {(r["probe"], r["strategy"]): r for r in ctx.results("out/results.jsonl")}
    assert records[("denied", "full")]["error"] == (
        "model error: BadRequestError: Incorrect API key provided: "
        f"Authorization: Bearer {REDACTED}"
    )
    assert records[("echo", "full")]["answer"] == (
        f"Sure. The request came with Authorization: Bearer {REDACTED}."
    )
    written = [p for p in (ctx.path / "cassettes").rglob("*") if p.is_file()]
    assert written  # the echoing answer was recorded
    written += [ctx.path / "out/results.jsonl", ctx.path / "out/report.html"]
    for path in written:
        assert PLANTED not in path.read_text(encoding="utf-8"), path
    assert PLANTED not in output(result)
    assert REDACTED in output(result)  # the failures were shown, scrubbed


LEAKY_STRATEGY = """
import os

from pytest_ctxeval.strategies.base import BaseStrategy


class Leaky(BaseStrategy):
    \"\"\"A strategy whose bug quotes the environment in its error.\"\"\"

    name = "leaky"

    def window(self):
        raise RuntimeError("cannot log in with " + os.environ["OPENAI_API_KEY"])
"""


def test_a_key_in_any_error_text_stays_out_of_the_report_and_terminal(
    ctx: CtxProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    ctx.write("leaky_strategy.py", LEAKY_STRATEGY)
    ctx.scenario("ops", ops_scenario("ops", '{id: day, user: "When?", expect: {contains: x}}'))
    result = ctx.run("--ctx-strategy=leaky_strategy:Leaky", "--ctx-report=out/report.html")
    (record,) = ctx.results()
    assert record["error"] == f"strategy 'leaky' raised RuntimeError: cannot log in with {REDACTED}"
    assert PLANTED not in unpacked_text((ctx.path / "out/report.html").read_text(encoding="utf-8"))
    assert PLANTED not in output(result)
