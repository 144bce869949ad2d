"""Expectations -> failed checks; verdicts -> classification; answer agreement."""

from __future__ import annotations

import pytest

from pytest_ctxeval.evaluate.scoring import agreement, check_answer, classify
from pytest_ctxeval.scenario.schema import Expectation

ANSWER = "Use urllib3 to fetch the page; the API key is Secret-9981."


def failed(answer: str | None, **expect: object) -> list[str]:
    return check_answer(answer, Expectation(**expect))


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
    assert classify(strategy_passed, full_passed) == classification


def test_agreement():
    assert agreement("The port is 5432.", "the  port is 5432") == 1.0
    assert agreement(None, "") == 1.0
    close = agreement("The port is 5432.", "The port is 8080.")
    far = agreement("The port is 5432.", "I could not find that in our conversation.")
    assert 0.0 < far < close < 1.0
    assert agreement("abc", "xyz") == 0.0
    assert agreement("The port is 5432.", "The port is 8080.") == agreement(
        "The port is 8080.", "The port is 5432."
    )
