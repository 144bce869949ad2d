"""The agreement judge, over real HTTP: what it asks the model, how it reads
every way a model words a verdict, and that a failed or unreadable reply is an
error, never a silent "agrees"."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, error, reply

from pytest_ctxeval.evaluate.judge import JudgeResult, judge_agreement
from pytest_ctxeval.llm.cassettes import CassetteStore
from pytest_ctxeval.llm.client import ModelClient

QUESTION = "Which port does the staging database listen on?"
REFERENCE = "The staging database listens on port 5433."
ANSWER = "[assistant] It is 5433."


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    # One server for the module: each test scripts the replies it consumes.
    with FakeOpenAIServer() as fake:
        yield fake


def client(server: FakeOpenAIServer, **kwargs: object) -> ModelClient:
    return ModelClient(
        "openai/test-model",
        api_base=server.url,
        backoff_s=0.01,
        max_attempts=2,
        **kwargs,  # type: ignore[arg-type]
    )


def judge(server: FakeOpenAIServer, content: str | None) -> JudgeResult:
    server.script(reply(content))
    return judge_agreement(client(server), QUESTION, ANSWER, REFERENCE)


def test_the_judge_is_asked_about_the_question_and_both_answers(server):
    result = judge(server, '{"agrees": true, "reason": "Both say port 5433."}')
    assert result == JudgeResult(True, "Both say port 5433.", result.cost_usd, None)
    body = server.chat_requests[-1].body
    assert body["temperature"] == 0
    prompt = "\n".join(m["content"] for m in body["messages"])
    for text in (QUESTION, REFERENCE, ANSWER):
        assert text in prompt
    assert "same information" in prompt
    assert "JSON" in prompt


@pytest.mark.parametrize(
    "content, agrees, reason",
    [
        ('{"agrees": false, "reason": "Different port."}', False, "Different port."),
        ('```json\n{"agrees": true, "reason": "Same."}\n```', True, "Same."),
        ('Here is my verdict: {"agrees": "no", "reason": "r"}', False, "r"),
        ('{"agrees": "YES"}', True, ""),
        ("Yes.", True, ""),
        ("YES - both name port 5433.", True, "both name port 5433."),
        ("**No**, the answer gives another port.", False, "the answer gives another port."),
        ("no", False, ""),
        ("Verdict: YES", True, ""),
    ],
)
def test_every_way_a_model_words_a_verdict_is_read(server, content, agrees, reason):
    result = judge(server, content)
    assert (result.agrees, result.reason, result.error) == (agrees, reason, None)


@pytest.mark.parametrize(
    "content",
    [
        "Maybe; it depends on the environment.",
        "Not quite the same.",  # "Not" is no verdict
        "I think yes",  # a verdict only counts at the start
        '{"reason": "no verdict key"}',
        "",
        None,
    ],
)
def test_a_reply_without_a_verdict_is_an_error_not_an_agreement(server, content):
    result = judge(server, content)
    assert result.agrees is False
    assert result.error is not None
    assert result.error.startswith("judge reply has no verdict")


def test_a_failed_call_is_an_error_not_an_agreement(server):
    server.script(error(400, "Invalid value for 'messages'"))
    result = judge_agreement(client(server), QUESTION, ANSWER, REFERENCE)
    assert result.agrees is False
    assert result.cost_usd == 0.0
    assert result.error is not None
    assert "judge model error" in result.error
    assert "Invalid value for 'messages'" in result.error


def test_judge_calls_are_recorded_and_replayed_like_every_other_call(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.script(reply("YES, same port."))
    asked = len(server.chat_requests)
    recorded = judge_agreement(
        client(server, cassettes=CassetteStore(tmp_path, "new")), QUESTION, ANSWER, REFERENCE
    )
    assert len(list(tmp_path.glob("*.json"))) == 1
    # A fresh client with recording off answers from the cassette, without HTTP.
    replayed = judge_agreement(
        client(server, cassettes=CassetteStore(tmp_path, "none")), QUESTION, ANSWER, REFERENCE
    )
    assert len(server.chat_requests) == asked + 1
    assert (
        (replayed.agrees, replayed.reason)
        == (recorded.agrees, recorded.reason)
        == (
            True,
            "same port.",
        )
    )
