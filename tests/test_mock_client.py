"""A run on a mock model answers in-process: litellm (seconds to import) is
never imported, and every answer, tool call and token count is what the
mock gives through litellm's custom provider."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.llm.mock_client import MockModelClient, model_client

SCENARIO = """
id: vault
system: You are a coding agent.
turns:
  - user: "Never use the requests library; always use urllib3."
  - assistant: Understood.
  - user: "For the record, the vault combination is 7-3-9-1."
  - assistant: Noted.
probes:
  - {id: code, user: "What is the vault combination?", expect: {contains: "7-3-9-1"}}
  - {id: fetch, user: "Write a function that downloads a URL."}
"""

MEMORY_TOOL = {
    "type": "function",
    "function": {
        "name": "retrieve_memory",
        "description": (
            "Stored memories:\nid=m1 | 120 chars | preview: The vault combination for the"
        ),
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    },
}

REQUESTS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "answer": (
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "The staging database listens on port 5432."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Which port does staging listen on?"},
        ],
        None,
    ),
    "no answer": ([{"role": "user", "content": "What is the capital of Mars?"}], None),
    "tool call": (
        [{"role": "user", "content": "What is the vault combination?"}],
        [MEMORY_TOOL],
    ),
    "summary": (
        [
            {"role": "user", "content": "Deploy to STAGING_EU on port 8443."},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Summarize the conversation so far."},
        ],
        None,
    ),
    "code": (
        [
            {"role": "user", "content": "Never use the requests library."},
            {"role": "user", "content": "Write a function that fetches a URL."},
        ],
        None,
    ),
}


def test_the_mock_models_get_the_in_process_client() -> None:
    assert type(model_client("ctxeval/oracle")) is MockModelClient
    assert type(model_client("ctxeval/lost-in-middle")) is MockModelClient
    assert type(model_client("openai/gpt-4o-mini")) is ModelClient


@pytest.mark.parametrize("model", ["ctxeval/oracle", "ctxeval/lost-in-middle", "ctxeval/echo"])
@pytest.mark.parametrize("name", list(REQUESTS))
def test_answers_and_usage_equal_the_litellm_providers(model: str, name: str) -> None:
    messages, tools = REQUESTS[name]
    through_litellm = ModelClient(model).complete(messages, tools, seed=3)
    in_process = MockModelClient(model).complete(messages, tools, seed=3)
    through_litellm.latency_s = in_process.latency_s = 0.0
    assert in_process == through_litellm


def test_a_request_is_answered_once() -> None:
    client = MockModelClient("ctxeval/oracle")
    messages, _ = REQUESTS["answer"]
    first = client.complete(messages)
    assert client.complete(list(messages)) is first
    assert client.calls == 1


def test_a_run_on_the_mock_model_never_imports_litellm(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "vault.yaml").write_text(SCENARIO, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    code = textwrap.dedent("""
        import sys
        import pytest

        class Check:
            def pytest_unconfigure(self, config):
                print("litellm imported:", "litellm" in sys.modules)

        code = pytest.main(
            ["-q", "-p", "no:cacheprovider", "--ctx-strategy=full,summarize,headtail"],
            plugins=[Check()],
        )
        print("exit", int(code))
        """)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert "exit 0" in out, out + result.stderr
    assert "litellm imported: False" in out
