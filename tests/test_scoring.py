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


# --- f1: answers scored as QA benchmarks score them --------------------------------


@pytest.mark.parametrize(
    ("answer", "gold", "passes"),
    [
        # A final period, case, articles and commas do not decide it.
        ("She adopted Pepper.", "Pepper", True),
        ("The answer is: a pottery class.", "A pottery class.", True),
        ("On 7 May, 2023.", "7 May 2023", True),
        # A sentence around the answer is not penalised...
        ('Caroline: I\'m reading "Becoming Nicole" by Amy Ellis Nutt.', '"Becoming Nicole"', True),
        # ...but a one-word answer must be a whole word of it.
        ("(session 12, 1:56 pm on 8 May, 2023) Hi!", "2", False),
        ("It happened in 2023.", "2", False),
        ("Her daughter turned 7 last week.", "7", True),
        ("Pepperoni pizza.", "Pepper", False),
        ("I could not find that in our conversation.", "Pepper", False),
        # Partial overlap of content counts as the benchmark counts it (F1 0.8 >= 0.5).
        ("A pottery class.", "a pottery class at the community centre", True),
        ("In June 2024.", "7 May 2023", False),
        # Plurals fold as LoCoMo's stemmer folds them.
        ("She has two cats.", "cat", True),
        # A gold answer of stopwords only is compared on its words.
        ("Yes, she did.", "Yes", True),
    ],
)
def test_f1_expectation(answer: str, gold: str, passes: bool) -> None:
    assert (failed(answer, f1=gold) == []) is passes


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        # Function words, a month or a year never make a match...
        ("I don't know, 2023.", "The week before 9 June 2023"),
        ("Caroline and her friends.", "Melanie and her kids"),
        ("(session 4, 10:37 am on 27 June, 2023)", "The week before 9 June 2023"),
        ("In May.", "7 May 2023"),
        ("It was the summer of 2023.", "summer 2022"),
        # ...and a number or a date must match whole.
        ("On 28 August.", "27 August"),
        ("On 8 May 2023.", "7 May 2023"),
        ("On 7 June 2023.", "7 May 2023"),
        ("He is 17 now.", "7"),
    ],
)
def test_f1_cannot_pass_by_chance(answer: str, gold: str) -> None:
    assert failed(answer, f1=gold), f"{answer!r} met f1 {gold!r}"


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("She went on 27 August.", "27 August"),
        ("May 7th, 2023.", "7 May 2023"),
        ("It was in 2022.", "2022"),
        ("Her daughter turned 7 last week.", "7"),
    ],
)
def test_f1_meets_a_whole_date_or_number_in_any_order(answer: str, gold: str) -> None:
    assert failed(answer, f1=gold) == []


def test_f1_does_not_count_the_words_the_question_gives() -> None:
    question = "What class did Melanie sign up for?"
    gold = Expectation(f1="A pottery class.")
    assert check_answer(question, gold, question)
    assert check_answer("She signed up for a class.", gold, question)
    assert check_answer("She signed up for a pottery class.", gold, question) == []
    # Every word of the gold answer in the question: those words count after all.
    assert check_answer("The pottery class.", gold, "Which pottery class?") == []


def test_f1_threshold_and_a_list_of_gold_answers() -> None:
    assert failed("A charity race.", f1="a charity race in the park", threshold=0.9) == [
        "f1 >= 0.9 against 'a charity race in the park' (best 0.80)"
    ]
    assert failed("They met in Oslo.", f1=["Bergen", "Oslo"]) == []
    assert failed("They met in Paris.", f1=["Bergen", "Oslo"])


def test_f1_is_the_best_run_of_content_words() -> None:
    from pytest_ctxeval.evaluate.f1 import gold_f1

    assert gold_f1("x y pottery class z", "a pottery class") == 1.0
    assert gold_f1("pottery and then a long detour and class", "pottery class") == pytest.approx(
        2 / 3
    )
    assert gold_f1("", "Pepper") == 0.0
    assert gold_f1("nothing in common", "Pepper") == 0.0


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({"threshold": 0.5}, "'threshold' applies to 'f1'"),
        ({"f1": "  "}, "is empty once whitespace"),
        ({"f1": []}, "empty list"),
        ({"f1": "x", "threshold": 0}, "greater than 0"),
        ({"f1": "x", "threshold": 1.5}, "less than or equal to 1"),
    ],
)
def test_f1_schema_errors(expect: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Expectation.model_validate(expect)


# --- abstains: declining to answer ---------------------------------------------------

ABSTENTIONS = [
    "I don't know.",
    "I do not know what instrument that is.",
    "I’m not sure; it never came up.",
    "That was not mentioned in our conversation.",
    "The conversation doesn't say.",
    "There is no information about a violin.",
    "There's no record of Melanie playing anything.",
    "No mention of that anywhere.",
    "I cannot determine that from what we discussed.",
    "I can't tell from the conversation.",
    "Caroline never said what she named it.",
    "It was never mentioned.",
    "That isn't specified.",
    "I could not find that in our conversation.",
    "Unfortunately, this information is not provided.",
    "The answer is unknown.",
    "I'm unable to answer that based on the chat.",
    "Nothing was said about it.",
    "That is not part of our conversation.",
    "I have no idea.",
    "There is no way to tell.",
    # Short forms.
    "Unknown.",
    "unknown",
    "N/A",
    "n/a.",
    "Not mentioned.",
    "Not specified",
    "None given.",
    "No information available.",
    # A hedge that ends in not knowing is still an abstention.
    "Ben likes cats, but I don't know about his dog.",
    "I don't know yet.",
    "That was not mentioned in our conversation. Is there anything else I can help with?",
]
ANSWERS = [
    "Melanie plays the violin.",
    "Pepper.",
    "She never said no to a walk in the park.",
    "Ben doesn't know how to swim, so he stayed home.",
    "She went to the support group on 7 May 2023.",
    "Caroline mentioned that she loves pottery.",
    "They discussed adoption agencies.",
    "He said he would bring cake.",
    "No, she prefers mint tea.",
    "It was an unknown artist's painting, bought in Oslo.",
    "",
    # Not knowing part of it, then answering, is an answer.
    "I don't know where he hid it, but it is in her slipper.",
    "I'm not sure, but I think it was the violin.",
    "It was never mentioned directly; however, she played the violin at the fair.",
    "Unknown at first. Later she said it was the violin.",
    "N/A for the first trip; the second was to Oslo.",
]


@pytest.mark.parametrize("answer", ABSTENTIONS)
def test_abstains_recognises_many_phrasings(answer: str) -> None:
    assert failed(answer, abstains=True) == []
    assert failed(answer, abstains=False) == ["answers (does not abstain)"]


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_is_not_an_abstention(answer: str) -> None:
    assert failed(answer, abstains=True) == ["abstains"]
    assert failed(answer, abstains=False) == []


def test_scenario_errors_name_the_line_of_a_bad_threshold_or_evidence() -> None:
    from inline_scenarios import only_error

    bad_threshold = """
        id: s
        turns:
          - user: hi
        probes:
          - id: p
            user: q
            expect: {threshold: 0.7}
        """
    assert only_error(bad_threshold) == (
        "scenarios/s.yaml:7:25: probes[0].expect.threshold: 'threshold' applies to 'f1'; "
        "expected an f1 gold answer with it"
    )
    unknown_evidence = """
        id: s
        turns:
          - user: I live in Oslo.
        needles:
          - {id: evidence-d1-1, text: I moved in May., turn: 1}
        probes:
          - {id: p, user: q, evidence: [evidence-d1-2]}
        """
    message = only_error(unknown_evidence)
    assert message.startswith("scenarios/s.yaml:7:")
    assert "names evidence 'evidence-d1-2'; known needles: evidence-d1-1; did you mean" in message
