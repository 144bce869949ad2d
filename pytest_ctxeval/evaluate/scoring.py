"""Expectations -> verdict; strategy vs. full-context verdicts -> classification;
agreement of two answers when a probe has no expectation."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

import regex

from ..scenario.schema import DEFAULT_F1_THRESHOLD, Expectation
from .abstention import abstains
from .code_checks import check_python
from .matching import normalise_text, occurs, same_answer
from .regex_budget import regex_budget


def check_answer(answer: str | None, expect: Expectation) -> list[str]:
    """The checks the answer fails, each as a readable sentence; [] is a pass.
    Text checks match as words (see ``matching``); regexes see the raw answer.
    Raises UncheckableAnswer when a check cannot finish on this answer."""
    text = answer or ""

    def found(s: str) -> bool:
        return occurs(s, text, expect.case_sensitive)

    failed: list[str] = []
    if expect.contains is not None and not found(expect.contains):
        failed.append(f"contains {expect.contains!r}")
    if expect.contains_any and not any(found(s) for s in expect.contains_any):
        failed.append(f"contains any of {expect.contains_any!r}")
    if expect.contains_all:
        missing = [s for s in expect.contains_all if not found(s)]
        if missing:
            failed.append(f"contains all of {expect.contains_all!r} (missing {missing!r})")
    if expect.not_contains is not None:
        banned = (
            [expect.not_contains] if isinstance(expect.not_contains, str) else expect.not_contains
        )
        present = [s for s in banned if found(s)]
        if present:
            failed.append(f"does not contain {present!r}")
    source = expect.source_file
    if expect.regex is not None and not matches(expect.regex, text, expect.case_sensitive, source):
        failed.append(f"matches /{expect.regex}/")
    if expect.not_regex is not None and matches(
        expect.not_regex, text, expect.case_sensitive, source
    ):
        failed.append(f"does not match /{expect.not_regex}/")
    if expect.equals is not None and not same_answer(text, expect.equals, expect.case_sensitive):
        failed.append(f"equals {expect.equals!r}")
    if expect.f1 is not None:
        golds = [expect.f1] if isinstance(expect.f1, str) else expect.f1
        threshold = DEFAULT_F1_THRESHOLD if expect.threshold is None else expect.threshold
        best = max(span_f1(text, gold, at_least=threshold) for gold in golds)
        if best < threshold:
            failed.append(f"f1 >= {threshold:g} against {expect.f1!r} (best {best:.2f})")
    if expect.abstains is not None and abstains(text) is not expect.abstains:
        failed.append("abstains" if expect.abstains else "answers (does not abstain)")
    if expect.python is not None:
        failed.extend(check_python(text, expect.python))
    return failed


def matches(pattern: str, text: str, case_sensitive: bool, source: str | None = None) -> bool:
    """``re.search(pattern, text)`` (ignoring case unless ``case_sensitive``),
    given up after 2 s, or sooner when the scenario file
    ``source`` or the run has little regex time left (see regex_budget).  The
    `regex` package in its re-compatible mode (VERSION0) runs the search, for
    its time limit."""
    flags = regex.VERSION0 | (0 if case_sensitive else regex.IGNORECASE)
    return regex_budget().search(pattern, text, flags, source)


# A role label a strategy or model puts before the answer: "[assistant] ...",
# "Assistant: ...", "**assistant:** ...".
_SPEAKER = re.compile(
    r"^\s*(?:\[\s*(?:assistant|user|system|tool|ai|bot|model)\b[^\]]*\]\s*:?"
    r"|\**(?:assistant|user|system|ai|bot|model)\s*:\**)\s*",
    re.IGNORECASE,
)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalise_answer(text: str) -> str:
    """An answer as QA benchmarks compare them (SQuAD, LoCoMo): no speaker
    label, lower case, thousands separators, punctuation and articles gone,
    single spaces."""
    while (label := _SPEAKER.match(text)) and label.end() > 0:
        text = text[label.end() :]
    lowered = normalise_text(text)
    # Deleted, not replaced by a space, as SQuAD does: "5433." = "5433", "don't" = "dont".
    no_punctuation = "".join(c for c in lowered if not _is_punctuation(c))
    return " ".join(_ARTICLES.sub(" ", no_punctuation).split())


def token_f1(prediction: str, reference: str) -> float:
    """F1 of the overlap of normalised tokens, in 0..1; two answers that are
    both empty after normalisation agree fully."""
    predicted = normalise_answer(prediction).split()
    expected = normalise_answer(reference).split()
    if not predicted or not expected:
        return 1.0 if predicted == expected else 0.0
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def span_f1(answer: str, gold: str, *, at_least: float = 0.0) -> float:
    """The best token F1 against ``gold`` of any run of consecutive words of
    the answer, in 0..1 (normalised as ``normalise_answer``).  QA benchmarks
    score a short answer; a model that answers in a sentence around it is
    not penalised for the words around the answer, and a one-word gold
    answer must be a whole word of it ("2" is not in "2023").

    ``at_least``: only scores from this one up need be exact (runs too long
    to reach it are not tried); a lower result may be an underestimate."""
    words = normalise_answer(answer).split()
    expected = normalise_answer(gold).split()
    if not expected:
        return 1.0 if not words else 0.0
    wanted = Counter(expected)
    # A run of L words scores at most 2n / (L + n) against n gold words.
    longest = len(words) if at_least <= 0 else int(len(expected) * (2 / at_least - 1))
    best = 0.0
    for start, word in enumerate(words):
        if word not in wanted:
            continue  # a best run starts (and ends) on a word of the gold answer
        seen: Counter[str] = Counter()
        same = 0
        for length, current in enumerate(words[start : start + longest], 1):
            if seen[current] < wanted[current]:
                same += 1
            seen[current] += 1
            if current in wanted:
                precision, recall = same / length, same / len(expected)
                best = max(best, 2 * precision * recall / (precision + recall))
        if best == 1.0:
            break
    return best


def agreement(answer: str | None, reference: str | None) -> float:
    """How far the strategy's answer agrees with the full-context answer, in
    0..1: token F1, 1.0 for answers equal after normalisation."""
    return token_f1(answer or "", reference or "")


def _is_punctuation(char: str) -> bool:
    return char in string.punctuation or unicodedata.category(char).startswith("P")
