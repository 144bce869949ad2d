"""Expectations -> failed checks; verdicts -> classification; answer agreement."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ctxeval.evaluate.outcome import Rates, classify
from pytest_ctxeval.evaluate.scoring import (
    agreement,
    check_answer,
    normalise_answer,
    token_f1,
)
from pytest_ctxeval.scenario.schema import Expectation

ANSWER = "Use urllib3 to fetch the page; the API key is Secret-9981."


def failed(answer: str | None, **expect: Any) -> list[str]:
    return check_answer(answer, Expectation.model_validate(expect))


@pytest.mark.parametrize(
    "expect, passes",
    [
        ({"contains": "secret-9981"}, True),  # case-insensitive by default
        ({"contains": "secret-1234"}, False),
        ({"contains_any": ["requests", "URLLIB3"]}, True),
        ({"contains_any": ["requests", "httpx"]}, False),
        ({"contains_all": ["urllib3", "api key"]}, True),
        ({"contains_all": ["urllib3", "httpx"]}, False),
        ({"not_contains": "requests"}, True),
        ({"not_contains": "URLLIB3"}, False),
        ({"not_contains": ["requests", "httpx"]}, True),
        ({"not_contains": ["requests", "urllib3"]}, False),
        ({"regex": r"secret-\d{4}"}, True),
        ({"regex": r"^secret"}, False),
        ({"not_regex": r"\bimport requests\b"}, True),
        ({"not_regex": r"URLLIB\d"}, False),
        ({"equals": "use urllib3 to fetch the page; the api key is secret-9981"}, True),
        ({"equals": "Use urllib3."}, False),
    ],
)
def test_each_expectation_kind(expect, passes):
    assert (failed(ANSWER, **expect) == []) is passes


@pytest.mark.parametrize(
    "expect",
    [
        {"contains": "secret-9981"},
        {"contains_any": ["URLLIB3"]},
        {"contains_all": ["urllib3", "API KEY"]},
        {"regex": "secret"},
    ],
)
def test_case_sensitive_true_makes_case_matter(expect):
    assert failed(ANSWER, **expect) == []
    assert failed(ANSWER, **expect, case_sensitive=True) != []


def test_case_sensitive_negative_checks():
    # Only the exact case counts as present.
    assert failed(ANSWER, not_contains="URLLIB3", case_sensitive=True) == []
    assert failed(ANSWER, not_regex="URLLIB", case_sensitive=True) == []
    assert failed(ANSWER, not_contains="urllib3", case_sensitive=True) != []


def test_equals_ignores_whitespace_and_trailing_punctuation():
    assert failed("  The   answer is\n42. ", equals="the answer is 42") == []
    assert failed("The answer is 420", equals="The answer is 42") != []


def test_equals_with_case_sensitive():
    assert failed("The answer is 42!", equals="The answer is 42", case_sensitive=True) == []
    assert failed(ANSWER, equals=ANSWER.lower(), case_sensitive=True) != []


def test_failed_checks_say_which_check_failed():
    found = failed(ANSWER, contains="httpx", not_contains="urllib3", contains_all=["page", "port"])
    assert len(found) == 3
    assert any("'httpx'" in f for f in found)
    assert any("urllib3" in f and "not contain" in f for f in found)
    assert any("'port'" in f and "missing" in f for f in found)


def test_no_answer_fails_positive_checks_and_passes_negative_ones():
    assert failed(None, contains="x") != []
    assert failed(None, not_contains="x") == []


@pytest.mark.parametrize(
    "strategy_passed, full_passed, classification",
    [
        (True, True, "ok"),
        (False, True, "context_loss"),
        (False, False, "model_miss"),
        (True, False, "rescued"),
    ],
)
def test_classify(strategy_passed, full_passed, classification):
    asked_once = Rates(int(strategy_passed), 1), Rates(int(full_passed), 1)
    assert classify(*asked_once) == classification


# -- checks a reader would accept ----------------------------------------------------------


@pytest.mark.parametrize(
    "expected, answer, passes",
    [
        ("15", "canary_percent = 15", True),
        ("15", "canary_percent = 150", False),
        ("15", "It was set in 2015.", False),
        ("15", "The version is 1.15.", False),
        ("15", "About 15.5 percent.", False),
        ("15", "A timeout of 15ms.", True),  # a unit may follow a number
        ("15", "(15%)", True),
        ("B", "Tell me about Bob.", False),
        ("B", "Input B is the refund status.", True),
        ("input B", "input Bob", False),
        ("tok", "stock levels", False),
        ("refund", "Two refunds were issued.", True),  # a longer word may go on
        ("cake", "She brought a cheesecake.", False),  # but must start a word
        ("lemon cake", "She brought lemon cakes.", True),
        ("urllib3", "Use urllib3.", True),
        ("7-3-9-1", "The code is 7\u20133\u20139\u20131.", True),  # typographic dashes
        ("don't", "I don\u2019t know.", True),  # typographic apostrophe
    ],
)
def test_contains_matches_numbers_and_short_tokens_as_whole_words(expected, answer, passes):
    assert (failed(answer, contains=expected) == []) is passes
    assert (failed(answer, contains_any=["nothing-like-it", expected]) == []) is passes
    assert (failed(answer, contains_all=[expected]) == []) is passes
    # not_contains finds exactly what contains finds.
    assert (failed(answer, not_contains=expected) != []) is passes


def test_a_number_is_not_found_inside_a_longer_one_by_not_contains_either():
    # The old value 30 must not be "present" in the new value 300.
    assert failed("timeout_seconds is now 300", not_contains="30") == []


@pytest.mark.parametrize("expected", ["5433", "5,433", "5 433"])
@pytest.mark.parametrize("answer", ["port 5433", "port 5,433", "port 5 433", "port 5\u00a0433"])
def test_thousands_separators_do_not_decide_a_verdict(expected, answer):
    assert failed(answer, contains=expected) == []
    assert failed(answer, equals=f"Port {expected}.") == []


def test_numbers_in_a_list_are_not_merged():
    # "1, 234" is two numbers; neither is 1234.
    assert failed("steps 1, 234 and 5", contains="1234") != []
    assert failed("ports 5432,5433", contains="5433") == []


@pytest.mark.parametrize(
    "expect",
    [
        {"contains": "port 5433."},
        {"contains": "PORT   5433"},
        {"contains_all": ["staging!", "port 5433?"]},
        {"equals": '"The staging database listens on port 5433."'},
        {"equals": "the staging database listens on port 5433"},
    ],
)
def test_case_whitespace_and_end_punctuation_do_not_decide_a_verdict(expect):
    assert failed("The staging\ndatabase listens on  port 5433", **expect) == []


def test_equals_ignores_surrounding_quotes_and_a_final_period_in_the_answer():
    assert failed("\u201cOsprey.\u201d", equals="Osprey") == []
    assert failed("'Osprey'", equals="osprey") == []
    assert failed("Osprey Mk2", equals="Osprey") != []


def test_case_sensitive_still_makes_case_matter_with_the_new_rules():
    assert failed("port 5433.", contains="Port 5433", case_sensitive=True) != []
    assert failed("Osprey.", equals='"osprey"', case_sensitive=True) != []
    assert failed("Osprey.", equals='"Osprey"', case_sensitive=True) == []


# -- agreement without an expectation ---------------------------------------------------------


@pytest.mark.parametrize(
    "text, normalised",
    [
        ("The port is 5,433.", "port is 5433"),
        ("[assistant] An apple, the pear!", "apple pear"),
        ("Assistant: Tuesday.", "tuesday"),
        ("**Assistant:** Tuesday", "tuesday"),
        ("[assistant: summary] Tuesday", "tuesday"),
        ("  We  meet\non   Tuesday ", "we meet on tuesday"),
        ("Note: we meet on Tuesday", "note we meet on tuesday"),  # not a speaker
    ],
)
def test_normalise_answer(text, normalised):
    assert normalise_answer(text) == normalised


def test_token_f1_is_the_f1_of_token_overlap():
    assert token_f1("the port is 5433", "Port 5433.") == pytest.approx(
        2 * (2 / 3 * 1) / (2 / 3 + 1)
    )
    assert token_f1("5433", "port 5433") == pytest.approx(2 / 3)
    assert token_f1("lemon cake", "no idea") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("The.", "") == 1.0  # both empty once normalised
    assert token_f1("", "5433") == 0.0


def test_agreement_accepts_a_rewording_and_a_speaker_label():
    reference = "We meet every Tuesday."
    assert agreement("[assistant] We meet every Tuesday", reference) == 1.0
    assert agreement("assistant: we meet every tuesday!", reference) == 1.0
    assert agreement("Every Tuesday, we meet.", reference) == 1.0  # same words, other order
    assert agreement("We meet on Tuesdays, every week.", reference) >= 0.6


def test_agreement_rejects_a_different_answer():
    assert agreement("I could not find that in our conversation.", "We meet every Tuesday.") == 0
    assert agreement("We meet every Friday.", "We meet every Tuesday.") < 1.0


def test_agreement_is_symmetric_and_handles_no_answer():
    a, b = "The staging port is 5433.", "Port 5433, I think."
    assert agreement(a, b) == agreement(b, a)
    assert agreement(None, "") == 1.0
    assert agreement(None, "Tuesday") == 0.0
