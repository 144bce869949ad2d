"""The oracle's word analysis: each distinct word is worked out once and kept,
within a bound, and what a text yields never depends on what was kept."""

from __future__ import annotations

import random

import pytest

from pytest_ctxeval.llm import text
from pytest_ctxeval.llm.oracle import respond


def _terms_word_by_word(sentence: str) -> list[str]:
    found = (text._term(word) for word in text._WORD.findall(sentence))
    return [term for term in found if term]


@pytest.mark.parametrize(
    "sentence",
    [
        "Tell me more about input B, step 3 and the libraries' stores.",
        "It's the staging DB's port: 5432 -- not 5433.",
        "'quoted' -dashed- a I x 7 the and of",
        "",
    ],
)
def test_terms_are_the_terms_of_each_word(sentence):
    assert text.terms(sentence) == _terms_word_by_word(sentence)


def test_a_full_word_cache_starts_over_and_answers_do_not_change(monkeypatch):
    messages = [
        {"role": "user", "content": "The staging database listens on port 5432."},
        {"role": "assistant", "content": "Noted, the staging database is on port 5432."},
        {"role": "user", "content": "Which port does the staging database use?"},
    ]
    text._TERM_OF.clear()
    text.sentences.cache_clear()
    expected = respond(messages).content
    monkeypatch.setattr(text, "_TERMS_REMEMBERED", 3)
    text._TERM_OF.clear()
    from pytest_ctxeval.llm import oracle

    oracle._text_candidates.cache_clear()
    assert respond(messages).content == expected
    assert "5432" in (expected or "")
    assert len(text._TERM_OF) <= 3


def test_sentences_of_a_text_are_kept_and_the_same_each_time():
    long_text = "First point here. Second point there!\nA new line?\n" + "x, " * 300
    first = text.sentences(long_text)
    assert text.sentences(long_text) is first  # worked out once
    assert first[:3] == ("First point here.", "Second point there!", "A new line?")
    assert all(len(piece) <= 400 for piece in first)


def test_every_sentence_comes_stripped_and_non_empty():
    # The decoy pool takes them as they are: " x" and "x" would be two decoys.
    rng = random.Random(3)
    pieces = ["word", ". ", "? ", "\n", " \t ", ", ", "; ", "} ", "\u00a0", "\u2028", "X", "7"]
    for _ in range(300):
        sample = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 400)))
        for sentence in text.sentences(sample):
            assert sentence and sentence == sentence.strip(), (sample, sentence)


def test_lines_without_a_sentence_end_are_split_as_lines_with_one_are():
    # Lines with no ".", "!" or "?" skip the sentence-end regex: the same pieces.
    def by_regex(sample: str) -> list[str]:
        pieces = []
        for line in sample.splitlines():
            for piece in text._SENTENCE_END.split(line.strip()):
                pieces.append(piece.strip())
        return [p for p in pieces if p]

    rng = random.Random(8)
    pieces = ["word", ". ", "! ", "? ", "\n", " ", ", ", '"x": 1', "Next", "7"]
    for _ in range(300):
        sample = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        assert list(text.sentences(sample)) == by_regex(sample), sample


@pytest.mark.parametrize(
    "sentence", ["ok", "sure, thanks", "the and of", "Deploy the canary.", "B", "x 7", ""]
)
def test_has_term_says_whether_a_sentence_has_terms(sentence):
    assert text.has_term(sentence) is bool(text.terms(sentence))


def test_the_oracle_finds_an_answer_whose_words_are_stemmed_or_upper_case():
    # The oracle reads only sentences that can hold a question word; a word
    # the question asks in another form ("policies" / "policy", "PORT") must
    # still be found.
    messages = [
        {"role": "user", "content": "Filler about the weather today."},
        {"role": "assistant", "content": "The retention POLICIES of the vault are strict."},
        {"role": "user", "content": "Nothing else here."},
        {"role": "user", "content": "What is the retention policy of the vault?"},
    ]
    assert "POLICIES" in (respond(messages).content or "")


@pytest.mark.parametrize(
    "texts",
    [
        ["Port 5432.", "  ", "", "Update:\tport\n5433 "],
        ["ΟΔΟΣ", "Σ at the start", "end ΑΣ"],  # a sigma's case depends on its neighbours
        ["a\u2028b", "\u00a0c\u3000", "Straße"],
        [],
    ],
)
def test_normalising_texts_one_by_one_and_joining_them_is_normalising_them_joined(texts):
    assert text.normalise_joined(texts) == text.normalise("\n".join(texts))


@pytest.mark.parametrize(
    ("text", "phrase", "found"),
    [
        ("port 15.", "15", True),
        ("at 12:15:03 it failed", "15", True),
        ("port 150", "15", False),
        ("in 2015", "15", False),
        ("ratio 15.5", "15", False),
        ("the  Staging\nPort is 5433", "staging port", True),
        ("stagingport", "staging port", False),
        ("anything", "", False),
    ],
)
def test_a_phrase_is_found_as_whole_words_in_normalised_text(text, phrase, found):
    assert text_module_contains(text, phrase) is found


def text_module_contains(raw: str, phrase: str) -> bool:
    return text.contains_phrase(text.normalise(raw), phrase)
