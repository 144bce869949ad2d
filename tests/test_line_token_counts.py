"""The mocks count a text's lines once: a text rebuilt from lines counted
before (headtail's memory listing, on every turn) costs its new lines, and
every count is the one litellm's chunked tiktoken count gives."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_ctxeval.llm import local_tokenizer
from pytest_ctxeval.llm.local_tokenizer import (
    CHUNK_CHARS,
    count_locally,
    count_plainly,
    local_encoding,
)


@pytest.fixture
def encoding() -> Any:
    found = local_encoding()
    if found is None:  # litellm ships the file; without it the mocks count through litellm
        pytest.skip("litellm's bundled encoding file is not installed")
    return found


@pytest.fixture(autouse=True)
def no_lines_counted_yet() -> Iterator[None]:
    local_tokenizer._LINE_TOKENS.clear()
    yield
    local_tokenizer._LINE_TOKENS.clear()


class Encoded:
    """The encoding, noting how many characters it tokenized."""

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.chars = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.chars += len(text)
        return list(self.encoding.encode_ordinary(text))


def listing(first: int, last: int) -> str:
    """A memory listing as headtail sends it: the newest memories, one per line."""
    lines = [
        f"\nid=m{n} | position {2 * n} | messages 1 | preview: Deploy {n} moved the "
        f"staging database to port {5400 + n} … rollback checked."
        for n in range(first, last + 1)
    ]
    older = (
        f"\n({first - 1} older memories, m1 to m{first - 1}, are not listed)" if first > 1 else ""
    )
    return "Memory index (call retrieve_memory with an id to read one):" + older + "".join(lines)


# Where a token could run on across a line break: whitespace or "/" after it,
# punctuation before it, line breaks in a row, Windows line ends, other scripts.
TRICKY = [
    "end.\n/usr/bin\nnext",
    "end.\n\nnext\n\n\n  indented\n\tTabbed\n",
    "a  \nb \r\nc\r\n\r\nd",
    "price: 5.\n5 dollars\n12\n345",
    "…\n…\nok…\n(aside)\n[note]\n{json}\n",
    "naïve\ncafé\n\u0301accent\n日本語\nテキスト\n",
    "x\n\u00a0nbsp\n\u2028sep\n\u3000wide\nend",
    "'s\n're\nit's\nthey'll\n",
    "https://example.com/a\n/b/c\n//d\n",
    "no line break at all, just a sentence.",
    "",
]


@pytest.mark.parametrize("text", TRICKY)
def test_a_text_counts_as_litellm_counts_it_whatever_its_line_breaks(
    encoding: Any, text: str
) -> None:
    # Twice: the second count reads its lines from what the first one kept.
    assert count_locally(encoding, text) == count_plainly(encoding, text)
    assert count_locally(encoding, text) == count_plainly(encoding, text)


def test_random_texts_of_shared_lines_count_as_litellm_counts_them(encoding: Any) -> None:
    rng = random.Random(7)
    pieces = ["word", " ", "\n", "/", ".", "…", "\t", "42", "é", "\r\n", "(", "'s", "  "]
    lines = ["".join(rng.choices(pieces, k=rng.randint(1, 30))) for _ in range(60)]
    for _ in range(300):
        text = "\n".join(rng.choices(lines, k=rng.randint(1, 80)))
        assert count_locally(encoding, text) == count_plainly(encoding, text), repr(text)


def test_a_listing_rebuilt_each_turn_counts_right_and_tokenizes_its_new_lines_only(
    encoding: Any,
) -> None:
    spy = Encoded(encoding)
    plain = 0
    for turn in range(1, 81):
        text = listing(max(1, turn - 39), turn)  # the newest 40, as headtail lists them
        assert count_locally(spy, text) == count_plainly(encoding, text)
        plain += len(text)
    # Each turn: one new line, the changed "older" line, and the lines a chunk boundary cuts.
    assert len(listing(41, 80)) > 4 * CHUNK_CHARS
    assert spy.chars < plain / 4


def test_a_long_output_of_new_lines_is_tokenized_once_in_whole_chunks(encoding: Any) -> None:
    spy = Encoded(encoding)
    log = "".join(
        f"2026-11-30T12:{i // 60:02}:{i % 60:02}Z INFO worker {i} done\n" for i in range(400)
    )
    assert count_locally(spy, log) == count_plainly(encoding, log)
    assert spy.chars == len(log)
    # Only its first chunk's lines were kept, not four hundred.
    assert len(local_tokenizer._LINE_TOKENS) < 40
