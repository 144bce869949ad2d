"""Against a real small model (SmolLM2-135M-Instruct served by llama.cpp).

Enable with:   eval "$(.ci/llm-server.sh)"   (first run compiles llama.cpp, ~4 min)
               python -m pytest tests/test_real_model.py -m real_model

The model is tiny and answers general questions unreliably, so these tests
check structure, not wording: non-empty answers, usage reported, a forced
tool call that round-trips, a needle found at temperature 0, and a replay
from the cassettes just recorded.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.llm._litellm import get_litellm
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.llm.tokens import window_tokens

API_BASE = os.environ.get("CTXEVAL_LLM_API_BASE", "")
MODEL = "openai/smollm2"
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.usefixtures("_preloaded_modules"),  # conftest.py
    pytest.mark.skipif(
        not API_BASE,
        reason='needs a local model server: run `eval "$(.ci/llm-server.sh)"` '
        "to start one and set CTXEVAL_LLM_API_BASE",
    ),
]


SCENARIO_YAML = """\
id: real-small
system: You are a helpful assistant. Answer in one short sentence.
turns:
  - user: Our staging database listens on port 5432.
  - assistant: Noted, the staging database uses port 5432.
  - user: The deploy window is Tuesday morning.
  - assistant: Noted, deploys happen on Tuesday morning.
  # A bare tool turn: its synthesised assistant call has no text, which a
  # llama.cpp chat template only accepts as "" (not null).
  - tool: {name: run_tests, output: "14 passed in 0.82s"}
  - assistant: All tests pass.
probes:
  - {id: port, user: "Which port does the staging database use?", expect: {contains: "5432"}}
  - {id: deploy, user: "When is the deploy window?", expect: {contains: "Tuesday"}}
"""

FILLER = [
    "The team met on Monday to review the quarterly roadmap and agreed on three priorities.",
    "Someone mentioned that the coffee machine on the third floor is broken again.",
    "The marketing group shared a draft of the new landing page for feedback.",
    "Customer support reported fewer tickets this week than the week before.",
    "A new intern joined the data team and is learning the reporting tools.",
    "The office plants were watered and the meeting room projector was replaced.",
    "Finance asked everyone to submit travel expenses before the end of the month.",
    "The design review was moved to Thursday afternoon because of a scheduling conflict.",
]
NEEDLE = "Important: the vault combination for the server room is 7-3-9-1."


def test_plugin_run_against_the_real_model_then_replay(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"scenarios/real-small": SCENARIO_YAML})
    args = [
        f"--ctx-model={MODEL}",
        f"--ctx-api-base={API_BASE}",
        "--ctx-strategy=full,headtail",
        "--ctx-cassettes=cassettes",
        "--ctx-fail-on=never",  # a 135M model's wording is not under test
        "-p",
        "no:xdist",
    ]
    started = time.perf_counter()
    first = pytester.runpytest(*args, "--ctx-results=first.jsonl")
    recorded_in = time.perf_counter() - started
    first.assert_outcomes(passed=4)
    records = read_jsonl(pytester.path / "first.jsonl")
    assert len(records) == 4
    for record in records:
        assert record["error"] is None, record["error"]
        assert record["answer"] and record["answer"].strip()
        assert record["ground_truth_answer"] and record["ground_truth_answer"].strip()
        assert record["prompt_tokens"] > 0 and record["llm_calls"] >= 1
        assert record["verdict"] in ("pass", "fail")
    cassettes = [json.loads(p.read_text()) for p in (pytester.path / "cassettes").glob("*.json")]
    assert cassettes
    for cassette in cassettes:  # usage as the server reported it
        assert cassette["response"]["usage"]["prompt_tokens"] > 0
        assert cassette["response"]["usage"]["completion_tokens"] > 0

    # Replay-only: same answers, and far faster than asking the model again.
    started = time.perf_counter()
    again = pytester.runpytest(*args, "--ctx-record=none", "--ctx-results=again.jsonl")
    replayed_in = time.perf_counter() - started
    again.assert_outcomes(passed=4)
    replayed = read_jsonl(pytester.path / "again.jsonl")
    assert [r["answer"] for r in replayed] == [r["answer"] for r in records]
    print(f"recorded in {recorded_in:.1f}s, replayed in {replayed_in:.1f}s")


def test_forced_tool_call_round_trip_through_litellm() -> None:
    litellm = get_litellm()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
    common: dict[str, Any] = {
        "model": MODEL,
        "api_base": API_BASE,
        "api_key": "sk-ctxeval-local",
        "temperature": 0,
        "max_tokens": 64,
        "timeout": 120,
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    first = litellm.completion(
        messages=messages,
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        **common,
    )
    calls = first.choices[0].message.tool_calls
    assert calls, "the model made no tool call although tool_choice named the function"
    call = calls[0]
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments), dict)
    assert first.usage.prompt_tokens > 0

    messages.append(
        {
            "role": "assistant",
            # "" rather than None: llama.cpp's chat template reads .content of every message.
            "content": "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": call.function.arguments},
                }
            ],
        }
    )
    messages.append(
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 degrees Celsius."}
    )
    second = litellm.completion(messages=messages, **common)
    assert (second.choices[0].message.content or "").strip()
    assert second.usage.prompt_tokens > first.usage.prompt_tokens


def test_needle_at_temperature_zero_in_a_1500_token_prompt() -> None:
    lines = [FILLER[i % len(FILLER)] for i in range(100)]
    lines.insert(len(lines) // 2, NEEDLE)
    messages = [
        {"role": "system", "content": "You answer questions about the notes you are given."},
        {
            "role": "user",
            "content": "Notes:\n"
            + "\n".join(lines)
            + "\n\nWhat is the vault combination for the server room?",
        },
    ]
    assert 1300 <= window_tokens(messages) <= 1800
    completion = ModelClient(MODEL, api_base=API_BASE, temperature=0.0).complete(messages)
    assert completion.prompt_tokens > 1000
    digits = "".join(ch for ch in completion.content or "" if ch.isdigit())
    assert "7391" in digits, completion.content


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
