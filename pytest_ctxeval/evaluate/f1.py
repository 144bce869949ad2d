"""The ``f1`` expectation: token F1 against a gold answer, as LoCoMo scores
it, that a function word, a month or a year cannot meet by chance.

Texts are normalised as LoCoMo's evaluation does (lower case; commas,
punctuation and the words a, an, the and "and" removed; plural endings
folded as the first step of Porter's stemmer does), then only **content
tokens** count: stopwords ("she", "to", "was", "I", "don't") are dropped
from both sides, so "I don't know, 2023." shares nothing with "The week
before 9 June 2023" but the year.  Two more rules:

- a month or a year alone never makes a match, nor does a word the probe's
  question gives ("What *class* did she sign up for?"): a gold answer with
  other content needs one of those other tokens in the answer too;
- a number or date matches whole: every number and month of the gold
  answer must be in the run of words scored ("28 August" does not meet
  "27 August", "7 June 2023" does not meet "7 May 2023"); ordinals are
  their number ("7th" = "7").

A gold answer made of stopwords only ("No", "yes") is compared on all its
words, as before.  The score is the best F1 of any run of consecutive
content tokens of the answer, so the words around a short answer do not
count against it.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from .answer_text import normalise_answer

# Function words: they carry no answer ("she", "was", "to", "I", "don't").
STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't arent as at be
    because been before being below between both but by can cannot could couldn't
    couldnt did didn't didnt do does doesn't doesnt doing don't dont down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's
    her here here's hers herself him himself his how how's i i'd i'll i'm i've if in
    into is isn't isnt it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't
    she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're
    they've this those through to too under until up very was wasn't wasnt we we'd
    we'll we're we've were weren't what what's when when's where where's which while
    who who's whom why why's will with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves yes yeah also just im ive id youre theyre
    hes shes thats whats dont wont cant isnt wasnt didnt doesnt""".split()
)
_MONTHS = frozenset(
    "january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_YEAR = re.compile(r"^(?:1[0-9]|2[0-9])\d\d$")
_AND = re.compile(r"\band\b")


# Texts whose tokens are kept: a probe's gold answer and question are scored
# against every strategy's answer, and the decoys of every probe.
_TEXTS_REMEMBERED = 20_000


@lru_cache(maxsize=_TEXTS_REMEMBERED)
def answer_tokens(text: str) -> tuple[str, ...]:
    """Every token of ``text`` after LoCoMo's normalisation, stemmed."""
    return tuple(_token(word) for word in _AND.sub(" ", normalise_answer(text)).split())


@lru_cache(maxsize=_TEXTS_REMEMBERED)
def content_tokens(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` that can make a match: no stopwords."""
    return tuple(t for t in answer_tokens(text) if t not in _STOP_TOKENS)


def gold_f1(answer: str, gold: str, *, at_least: float = 0.0, question: str = "") -> float:
    """The best token F1 against ``gold`` of any run of consecutive content
    tokens of the answer, in 0..1, under the module's rules.

    ``question``: the words it gives ("What *class* did she sign up for?")
    make no match alone either, so repeating the question is no answer.

    ``at_least``: only scores from this one up need be exact (runs too long
    to reach it are not tried); a lower result may be an underestimate."""
    expected = content_tokens(gold)
    if expected:
        words = content_tokens(answer)
    else:  # a gold answer of stopwords only: every word counts
        expected, words = answer_tokens(gold), answer_tokens(answer)
        if not expected:
            return 1.0 if not words else 0.0
    wanted = Counter(expected)
    # Every number and month of the gold answer must be in the run scored.
    whole = {t for t in wanted if _is_date_part(t)}
    # A month, a year or a word of the question alone is no match when the
    # gold answer says more.
    given = set(answer_tokens(question))
    telling = {t for t in wanted if not _is_month_or_year(t) and t not in given}
    telling = telling or {t for t in wanted if not _is_month_or_year(t)} or set(wanted)
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
            if current not in wanted or not whole <= seen.keys():
                continue
            if not any(t in seen for t in telling):
                continue
            precision, recall = same / length, same / len(expected)
            best = max(best, 2 * precision * recall / (precision + recall))
        if best == 1.0:
            break
    return best


def _token(word: str) -> str:
    ordinal = _ORDINAL.match(word)
    if ordinal:
        return ordinal.group(1)
    return _plural(word)


def _plural(word: str) -> str:
    """Porter's step 1a: caresses -> caress, ponies -> poni, cats -> cat."""
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-2]
    if word.endswith("ss") or not word.endswith("s") or len(word) <= 3:
        return word
    return word[:-1]


def _is_month_or_year(token: str) -> bool:
    return token in _MONTHS or _YEAR.match(token) is not None


def _is_date_part(token: str) -> bool:
    return token in _MONTHS or any(c.isdecimal() for c in token)


# Stopwords as the tokens they become (no apostrophes, plurals folded).
_STOP_TOKENS = frozenset(_token(w.replace("'", "")) for w in STOPWORDS) | STOPWORDS
