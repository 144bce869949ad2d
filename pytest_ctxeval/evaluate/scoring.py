"""Expectations -> verdict; strategy vs. full-context verdicts -> classification."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from ..scenario.schema import Expectation
from .code_checks import check_python


def check_answer(answer: str | None, expect: Expectation) -> list[str]:
    """The checks the answer fails, each as a readable sentence; [] is a pass."""
    text = answer or ""
    flags = 0 if expect.case_sensitive else re.IGNORECASE

    def norm(s: str) -> str:
        return s if expect.case_sensitive else s.casefold()

    haystack = norm(text)
    failed: list[str] = []
    if expect.contains is not None and norm(expect.contains) not in haystack:
        failed.append(f"contains {expect.contains!r}")
    if expect.contains_any and not any(norm(s) in haystack for s in expect.contains_any):
        failed.append(f"contains any of {expect.contains_any!r}")
    if expect.contains_all:
        missing = [s for s in expect.contains_all if norm(s) not in haystack]
        if missing:
            failed.append(f"contains all of {expect.contains_all!r} (missing {missing!r})")
    if expect.not_contains is not None:
        banned = (
            [expect.not_contains] if isinstance(expect.not_contains, str) else expect.not_contains
        )
        present = [s for s in banned if norm(s) in haystack]
        if present:
            failed.append(f"does not contain {present!r}")
    if expect.regex is not None and not re.search(expect.regex, text, flags):
        failed.append(f"matches /{expect.regex}/")
    if expect.not_regex is not None and re.search(expect.not_regex, text, flags):
        failed.append(f"does not match /{expect.not_regex}/")
    if expect.equals is not None and normalise(text, expect.case_sensitive) != normalise(
        expect.equals, expect.case_sensitive
    ):
        failed.append(f"equals {expect.equals!r}")
    if expect.python is not None:
        failed.extend(check_python(text, expect.python))
    return failed


def normalise(text: str, case_sensitive: bool = False) -> str:
    collapsed = " ".join(text.split()).strip(" .!")
    return collapsed if case_sensitive else collapsed.casefold()


def agreement(answer: str | None, reference: str | None) -> float:
    """Similarity of two answers in 0..1 after normalisation."""
    a, b = normalise(answer or ""), normalise(reference or "")
    if a == b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def classify(strategy_passed: bool, full_passed: bool) -> str:
    if strategy_passed:
        return "ok" if full_passed else "rescued"
    return "context_loss" if full_passed else "model_miss"
