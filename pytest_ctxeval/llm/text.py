"""Lexical helpers shared by the mock models and fact survival: sentences,
terms, overlap, and whole-word phrase matching."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

_STOPWORDS = frozenset(
    """about above after again all also and any are aren't because been before being
    below between both but can could did does doing down during each few for from
    further had has have having her here hers him his how i'm into its it's itself
    just let's more most much not now off once only other our ours out over own
    please same she should some such tell than that the their theirs them then
    there these they this those through too under until very was were what when
    where which while who whom why will with would you your yours yourself me my
    is be it of to in on at as by or an if so do we he us no yes give show say
    again know think""".split()
)

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_'\-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_MAX_SENTENCE = 400
# Distinct texts whose sentences are kept (a long session has tens of thousands).
_TEXTS_REMEMBERED = 50_000


def terms(text: str) -> list[str]:
    """Content words, lower-cased and lightly stemmed.

    A lone capital letter or digit is kept ("input B", "step 3"): in chat it
    is usually a label someone will refer back to."""
    # Words repeat far more than texts do: each distinct word is looked at
    # once, and the lookups run in C (map and filter over the word list).
    return list(filter(None, map(_TERM_OF.__getitem__, _WORD.findall(text))))


def has_term(text: str) -> bool:
    """Whether ``text`` has a content word: ``bool(terms(text))``, stopping
    at the first one.  Most sentences begin with one, so the first word is
    looked at before the scan of the rest is set up."""
    first = _WORD.search(text)
    if first is None:
        return False
    if _TERM_OF[first.group()]:
        return True
    rest = _WORD.finditer(text, first.end())
    return any(map(_TERM_OF.__getitem__, map(re.Match.group, rest)))


class _TermsOfWords(dict[str, str]):
    """Word -> its term, worked out on the first lookup of each word."""

    def __missing__(self, word: str) -> str:
        if len(self) >= _TERMS_REMEMBERED:
            self.clear()
        term = self[word] = _term(word)
        return term


def _term(word: str) -> str:
    """The term a word counts as; "" for a word that is none."""
    word = word.strip("'-")
    if not word:
        return ""
    if len(word) == 1:
        return word.lower() if word.isupper() or word.isdigit() else ""
    low = word.lower()
    return "" if low in _STOPWORDS else _stem(low)


_TERM_OF = _TermsOfWords()
_TERMS_REMEMBERED = 200_000


def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=_TEXTS_REMEMBERED)
def sentences(text: str) -> tuple[str, ...]:
    """Lines, then sentences; very long lines (minified JSON) in chunks.

    Kept per text: the oracle, the summariser and the decoy sampling all read
    the same session texts, and consecutive windows repeat them."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        # A line with no sentence end (most lines of JSON or a table) is one piece.
        ends = "." in line or "!" in line or "?" in line
        for sentence in _SENTENCE_END.split(line) if ends else (line,):
            sentence = sentence.strip()
            while len(sentence) > _MAX_SENTENCE:
                cut = max(sentence.rfind(sep, 0, _MAX_SENTENCE) for sep in (", ", "; ", "} "))
                cut = cut + 1 if cut > 0 else _MAX_SENTENCE
                out.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                out.append(sentence)
    return tuple(out)


def idf_weights(documents: Iterable[set[str]]) -> dict[str, float]:
    docs = list(documents)
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc)
    n = len(docs) or 1
    return {term: math.log(1 + n / count) for term, count in df.items()}


def normalise(text: str) -> str:
    """Case-folded, with every run of whitespace one space: how phrases are compared."""
    return " ".join(text.split()).casefold()


@lru_cache(maxsize=_TEXTS_REMEMBERED)
def normalised(text: str) -> str:
    """``normalise(text)``, kept per distinct text: a session's texts are read
    again by each window that shows them and by the fact checks."""
    return normalise(text)


def normalise_joined(texts: Iterable[str]) -> str:
    """``normalise("\n".join(texts))``, put together from each text's kept
    normal form: the line breaks between texts are whitespace, so no word
    spans two texts, and case folding maps each character on its own."""
    return " ".join(filter(None, map(normalised, texts)))


def contains_phrase(normalised_text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in an already normalised text as whole words.

    ``15`` is found in "port 15." and "12:15:03" but not in "150", "2015" or
    "15.5": a number's digits and decimals belong to it."""
    wanted = normalised(phrase)
    # The plain substring test first: the whole-word regex is far slower, and
    # most texts (a window checked for each of 190 facts) hold no such phrase.
    return wanted in normalised_text and _phrase_pattern(wanted).search(normalised_text) is not None


@lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    if not phrase:
        return re.compile(r"(?!)")  # an empty answer is evidence of nothing
    before = r"(?<!\w)(?<!\d[.,])" if re.match(r"\w", phrase) else ""
    after = r"(?!\w)(?![.,]\d)" if re.search(r"\w$", phrase) else ""
    return re.compile(before + re.escape(phrase) + after)
