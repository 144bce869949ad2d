"""Work counted, not timed: every distinct text is tokenized once per run,
whichever name of the mock model the caller counts it for (the session path
says ``ctxeval/oracle``, the mock client counts for the tokenizer's model)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from conftest import CtxProject

from pytest_ctxeval.llm import tokens

TEXT = "The staging database listens on port 5433 since the migration."


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times each text reached the tokenizer."""
    seen: Counter[str] = Counter()
    count = tokens.count_locally

    def counted(encoding: object, text: str) -> int:
        seen[text] += 1
        return count(encoding, text)  # type: ignore[arg-type]

    monkeypatch.setattr(tokens, "count_locally", counted)
    tokens.clear_token_counts()
    yield seen
    tokens.clear_token_counts()


def test_a_text_counted_for_two_names_of_the_mock_is_tokenized_once(
    encodes: Counter[str],
) -> None:
    first = tokens.count_text_tokens(TEXT, "ctxeval/oracle")
    second = tokens.count_text_tokens(TEXT)  # the mock client's default
    third = tokens.count_text_tokens(TEXT, "ctxeval/lost-in-middle")

    assert first == second == third > 0
    assert encodes[TEXT] == 1


def test_each_message_of_a_run_under_full_is_tokenized_once(
    ctx: CtxProject, encodes: Counter[str]
) -> None:
    lines = ["id: long", "turns:"]
    for i in range(30):
        lines.append(f"  - user: Pair {i} says the weekly report number {i} moved again.")
        lines.append(f"  - assistant: Noted, item {i} of the weekly report is recorded.")
    lines += [
        "  - user: The vault code for project Osprey is 4821-7305.",
        "  - assistant: Recorded.",
        "probes:",
        "  - id: code",
        "    user: What is the vault code for project Osprey?",
        "    expect: {contains: 4821-7305}",
    ]
    ctx.scenario("long", "\n".join(lines) + "\n")

    result = ctx.run("--ctx-strategy=full", "--ctx-model=ctxeval/oracle")

    result.assert_outcomes(passed=1)
    assert encodes, "nothing was tokenized"
    twice = {text: n for text, n in encodes.items() if n > 1}
    assert twice == {}
