"""Expectations -> verdict; strategy vs. full-context verdicts -> classification;
agreement of two answers when a probe has no expectation."""

from __future__ import annotations

from collections import Counter

import regex

from ..scenario.schema import DEFAULT_F1_THRESHOLD, Expectation
from ..text import occurs, same_answer
from .abstention import abstains
from .answer_text import normalise_answer
from .code_checks import check_python
from .f1 import gold_f1
from .regex_budget import regex_budget


def check_answer(answer: str | None, expect: Expectation, question: str = "") -> list[str]:
    """The checks the answer fails, each as a readable sentence; [] is a pass.
    Text checks match as words (see ``matching``); regexes see the raw answer;
    ``f1`` does not count words the probe's ``question`` gives (see ``f1``).
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
        best = max(gold_f1(text, gold, at_least=threshold, question=question) for gold in golds)
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


def agreement(answer: str | None, reference: str | None) -> float:
    """How far the strategy's answer agrees with the full-context answer, in
    0..1: token F1, 1.0 for answers equal after normalisation."""
    return token_f1(answer or "", reference or "")
