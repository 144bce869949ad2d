"""Validating and collecting scenarios with a mock model never import litellm
(seconds of start-up): the mocks count tokens with tiktoken directly, from the
encoding file litellm bundles, offline, and exactly as litellm counts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_ctxeval.llm.local_tokenizer import CHUNK_CHARS
from pytest_ctxeval.llm.tokens import count_text_tokens

# A needle placed by depth: building the scenario counts the session's tokens.
DEPTH_SCENARIO = """
    id: vault
    turns:
      - generate: {kind: chitchat, turns: 12, seed: 3}
    needles:
      - id: code
        depth: 0.5
        text: "For the record, the vault combination is 7-3-9-1."
        question: What is the vault combination?
        answer: "7-3-9-1"
    probes:
      - {id: code, needle: code}
"""

# What a user's process may have set: tiktoken would look there (and
# download into it) if the mocks did not read litellm's bundled copy.
NETWORK_OFF = """
import socket
def refuse(*args, **kwargs):
    raise OSError("network is off in this test")
socket.socket.connect = refuse
socket.getaddrinfo = refuse
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def run_python(code: str, cwd: Path, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", NETWORK_OFF + textwrap.dedent(code)],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_validating_a_depth_needle_does_not_import_litellm(tmp_path: Path) -> None:
    scenario = write(tmp_path / "vault.yaml", DEPTH_SCENARIO)
    out = run_python(
        f"""
        import sys
        from pytest_ctxeval.cli import main
        code = main(["validate", {str(scenario)!r}])
        print("exit", code, "litellm imported:", "litellm" in sys.modules)
        """,
        tmp_path,
    )
    assert out.splitlines() == [f"{scenario}: ok (1 scenario)", "exit 0 litellm imported: False"]


def test_collecting_with_the_mock_model_does_not_import_litellm(tmp_path: Path) -> None:
    write(tmp_path / "scenarios" / "vault.yaml", DEPTH_SCENARIO)
    write(tmp_path / "pytest.ini", "[pytest]\n")
    out = run_python(
        """
        import sys
        import pytest

        class Check:
            def pytest_collection_finish(self, session):
                print("items", len(session.items), "litellm imported:", "litellm" in sys.modules)

        pytest.main(
            ["--collect-only", "-q", "-p", "no:cacheprovider", "--ctx-strategy=full,sliding"],
            plugins=[Check()],
        )
        """,
        tmp_path,
    )
    assert "items 2 litellm imported: False" in out


def test_the_mock_tokenizer_works_offline_and_leaves_the_environment_alone(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    out = run_python(
        """
        import os, sys
        from pytest_ctxeval.llm.tokens import count_text_tokens
        print(count_text_tokens("The vault combination is 7-3-9-1."))
        print(os.environ["TIKTOKEN_CACHE_DIR"], "litellm" in sys.modules)
        """,
        tmp_path,
        TIKTOKEN_CACHE_DIR=str(cache),
    )
    count, env = out.splitlines()
    assert int(count) > 0
    assert env == f"{cache} False"
    assert list(cache.iterdir()) == []  # nothing downloaded or copied there


def litellm_count(text: str, model: str) -> int:
    from pytest_ctxeval.llm._litellm import get_litellm

    return int(get_litellm().token_counter(model=model, text=text))


@pytest.mark.parametrize(
    "text",
    [
        "The staging database listens on port 5433, not the default.",
        # Longer than litellm's chunk, so chunk boundaries matter.
        "lorem ipsum dolor sit amet, " * 200,
        "x" * (CHUNK_CHARS * 3 + 7),
        '{"rows": [' + ", ".join(f'{{"id": {i}, "name": "row-{i}"}}' for i in range(300)) + "]}",
        "naïve café — 東京 🙂 " * 120,
        "a reply that quotes <|endoftext|> and <|endofprompt|> as plain text",
    ],
    ids=["short", "prose", "one-char-run", "json", "unicode", "special-tokens"],
)
def test_mock_counts_equal_litellms_for_the_same_model(text: str) -> None:
    assert count_text_tokens(text) == litellm_count(text, "gpt-4o-mini")
    assert count_text_tokens(text, "ctxeval/oracle") == litellm_count(text, "gpt-4o-mini")


def test_a_real_model_counts_with_its_own_tokenizer() -> None:
    # gpt-3.5-turbo uses another encoding than the mocks: its counts differ.
    text = "naïve café — 東京 🙂 " * 50
    assert count_text_tokens(text, "gpt-3.5-turbo") == litellm_count(text, "gpt-3.5-turbo")
    assert count_text_tokens(text, "gpt-3.5-turbo") != count_text_tokens(text)
