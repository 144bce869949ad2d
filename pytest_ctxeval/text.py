"""Whether an expected string is in an answer, the way a reader would judge it.

Both texts are normalised first: case (unless case-sensitive), runs of
whitespace, typographic quotes and dashes, and thousands separators in
numbers (``5,433`` = ``5 433`` = ``5433``) do not decide a verdict, nor does
punctuation that ends the expected string (``port 5433.``).

Then matching is by words.  An expected string that starts with a letter or
digit must start a word of the answer (``cake`` is not in ``cheesecake``,
``15`` is not in ``2015`` or ``1.15``).  At its end a number must end too
(``15`` is not in ``150`` or ``15.5``, but is in ``15ms``), and so must a
short word of up to three letters or digits (``B`` is not in ``Bob``); a
longer word may go on, so ``refund`` matches ``refunds``.
"""

from __future__ import annotations

import re

SHORT_WORD = 3  # a final word this long or shorter must end where the answer's word ends

# Typographic variants a model may use for the plain characters an author typed.
_PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
    }
)
# 1-3 digits, then groups of exactly three after one separator, the same one
# throughout: "5,433", "1 000 000".  Not inside a longer number or a decimal.
_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})([, ])(\d{3}(?:\2\d{3})*)(?!\d)")
_END_PUNCTUATION = ".!?,;:\u2026"
_QUOTES = ('"', "'", "`")
# Scripts written without spaces between words: there a "word" cannot be
# told from its neighbours, so matching stays a plain substring search.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
    "\U00020000-\U0003ffff]"
)


def normalise_text(text: str, case_sensitive: bool = False) -> str:
    """Plain quotes and dashes, single spaces, numbers without thousands separators."""
    plain = " ".join(text.translate(_PLAIN).split())
    plain = _THOUSANDS.sub(lambda m: m.group(1) + m.group(3).replace(m.group(2), ""), plain)
    return plain if case_sensitive else plain.casefold()


def normalise_expected(text: str, case_sensitive: bool = False, *, quotes: bool = False) -> str:
    """``normalise_text`` without the punctuation that ends a sentence (and,
    with ``quotes``, without quotes around the whole): what must be found."""
    out = normalise_text(text, case_sensitive)
    while True:
        before = out
        out = out.rstrip(_END_PUNCTUATION).strip()
        if quotes and len(out) >= 2 and out[0] == out[-1] and out[0] in _QUOTES:
            out = out[1:-1].strip()
        if out == before:
            return out


def occurs(expected: str, answer: str, case_sensitive: bool = False) -> bool:
    """Whether ``expected`` is in ``answer`` as words (see the module docstring)."""
    needle = normalise_expected(expected, case_sensitive)
    haystack = normalise_text(answer, case_sensitive)
    if not needle:
        return True  # the schema rejects empty expectations; nothing is always "in"
    at = haystack.find(needle)
    while at != -1:
        if _starts_word(haystack, at, needle) and _ends_word(haystack, at + len(needle), needle):
            return True
        at = haystack.find(needle, at + 1)
    return False


def same_answer(answer: str, expected: str, case_sensitive: bool = False) -> bool:
    """``equals``: the same after normalisation, final punctuation and surrounding quotes."""
    return normalise_expected(answer, case_sensitive, quotes=True) == normalise_expected(
        expected, case_sensitive, quotes=True
    )


def _is_word_char(char: str) -> bool:
    return char.isalnum() and not _UNSPACED.match(char)


def _starts_word(haystack: str, at: int, needle: str) -> bool:
    if not _is_word_char(needle[0]) or at == 0:
        return True
    if _is_word_char(haystack[at - 1]):
        return False
    # "15" in "1.15": the digits after a decimal point are not a number of their own.
    # (A comma between digits is a list, "5432,5433", or a thousands separator,
    # which normalisation has removed.)
    decimal = at >= 2 and haystack[at - 1] == "." and haystack[at - 2].isdecimal()
    return not (needle[0].isdecimal() and decimal)


def _ends_word(haystack: str, end: int, needle: str) -> bool:
    last = needle[-1]
    if not _is_word_char(last) or end == len(haystack):
        return True
    after = haystack[end]
    if last.isdecimal():
        decimal = after == "." and end + 1 < len(haystack) and haystack[end + 1].isdecimal()
        return not (after.isdecimal() or decimal)
    return not (_is_word_char(after) and _final_word_length(needle) <= SHORT_WORD)


def _final_word_length(text: str) -> int:
    length = 0
    for char in reversed(text):
        if not _is_word_char(char):
            break
        length += 1
    return length
