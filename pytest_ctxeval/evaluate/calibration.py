"""Calibration: a probe whose expectation an answer that knows nothing meets
measures nothing.

Before a probe counts, its expectation (and its constraint's check) is
scored against decoys that carry no knowledge of the session:

- the probe's own question (a model that repeats it);
- plain abstentions ("I could not find that in our conversation.");
- the session's header and timestamp lines (``(session 4, 10:37 am on 27
  June, 2023)``), alone and after an abstention;
- a seeded sample of the session's sentences that hold none of the probe's
  evidence (its needle, the needles it cites, its constraint).

A probe any decoy passes is ``uncheckable``: a strategy that lost every
statement could pass it, so its verdict says nothing about the strategy.
For an ``abstains: true`` expectation an abstention is the knowledge (the
question asks about something never said), so the abstentions are not its
decoys.  A sentence that states an expected string whole (or matches the
expectation's regex) says the answer, wherever it is: it is knowledge, not
a decoy.  So the sentence decoys catch an ``f1`` met by a word or two of an
unrelated sentence, and a probe of nothing but ``not_contains``, which any
unrelated sentence passes.

Decoys cost no model call and are scored once per probe (a sweep point
shares its probe's), kept on the conversation.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from ..llm.request_text import message_texts
from ..llm.text import normalise, sentences
from ..scenario.build import Conversation, ProbeCase
from ..scenario.schema import Expectation
from ..text import occurs
from ..textcap import cap_text
from .scoring import check_answer, matches
from .uncheckable import UncheckableAnswer

if TYPE_CHECKING:
    from ..results.record import ResultRecord
    from .simulate import SessionTrace

# What a model says when it knows nothing.
ABSTENTIONS = (
    "I could not find that in our conversation.",
    "I don't know.",
    "That was never mentioned.",
)
# Session sentences sampled per probe; header and timestamp lines kept at most.
SENTENCE_SAMPLE = 32
MAX_HEADERS = 32
# What a record keeps of the decoy's text.
DECOY_RECORD_CHARS = 1_000
# A header or timestamp line is short: one line of at most this many characters.
HEADER_CHARS = 120
# Words a timestamp line may have besides its date and time ("session", "on", a weekday).
_TIMESTAMP_OTHER_WORDS = 3
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE_PART = re.compile(
    rf"\b(?:{_MONTHS}|{_DAYS}|am|pm|utc|gmt|on|at|session|\d+(?:st|nd|rd|th)?)\b"
    r"|\d{1,4}[-/:.]\d{1,2}(?:[-/:.]\d{1,4})*",
    re.IGNORECASE,
)
_HAS_DATE = re.compile(
    rf"\b(?:{_MONTHS})\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}:\d{{2}}\b", re.IGNORECASE
)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_WORD = re.compile(r"[^\W_]+")
# At least two words (two runs of _WORD), found without listing them all.
_TWO_WORDS = re.compile(r"(?<![^\W_])[^\W_]+[\W_]+[^\W_]")
_CACHE_KEY = "_ctxeval_decoy_passes"


@dataclass(frozen=True)
class Decoy:
    """An answer that knows nothing of the session; ``kind`` says what it is."""

    kind: str  # "question", "abstention", "session header", "session sentence"
    text: str


@dataclass(frozen=True)
class DecoyPass:
    """The first decoy that met a probe's expectation."""

    decoy: Decoy

    def describe(self) -> str:
        return f"the {self.decoy.kind} {self.decoy.text!r} meets its expectation"

    def as_record(self) -> dict[str, str]:
        return {"kind": self.decoy.kind, "text": cap_text(self.decoy.text, DECOY_RECORD_CHARS)}


def uncheckable(record: ResultRecord, found: DecoyPass, trace: SessionTrace | None) -> None:
    """``record`` classified ``uncheckable``: not scored (its verdict stays
    ``error``: there is none), the decoy named, the session's figures kept."""
    record.classification = "uncheckable"
    record.decoy = found.as_record()
    if trace is not None:
        record.cumulative_input_tokens = trace.cumulative_input_tokens
        record.peak_prompt_tokens = trace.peak_prompt_tokens


def decoy_pass(conversation: Conversation, probe: ProbeCase) -> DecoyPass | None:
    """The decoy that meets the probe's expectation, or None when none does
    (or the probe has no expectation: it is scored against the full context)."""
    expectations = [e for e in (probe.expect, probe.constraint_check) if e is not None]
    if not expectations:
        return None
    key = getattr(probe, "base_id", "") or probe.id
    cache: dict[str, DecoyPass | None] = conversation.__dict__.setdefault(_CACHE_KEY, {})
    if key not in cache:
        cache[key] = _first_pass(conversation, probe, key, expectations)
    return cache[key]


def _first_pass(
    conversation: Conversation, probe: ProbeCase, key: str, expectations: list[Expectation]
) -> DecoyPass | None:
    for decoy in decoys(conversation, probe, key, expectations):
        if _meets(decoy.text, expectations, probe.question):
            return DecoyPass(decoy)
    return None


def decoys(
    conversation: Conversation,
    probe: ProbeCase,
    key: str | None = None,
    expectations: list[Expectation] | None = None,
) -> list[Decoy]:
    """Every decoy of the probe, in the order they are tried."""
    if expectations is None:
        expectations = [e for e in (probe.expect, probe.constraint_check) if e is not None]
    abstaining = any(e.abstains is True for e in expectations)
    found = [Decoy("question", probe.question)] if probe.question.strip() else []
    headers = session_headers(conversation)
    if not abstaining:
        found += [Decoy("abstention", text) for text in ABSTENTIONS]
        years = list(dict.fromkeys(y for h, _ in headers for y in _YEAR.findall(h)))[:3]
        found += [Decoy("abstention", f"I don't know, {year}.") for year in years]
    # A chat's opening header is one; a date line inside the session may be
    # the fact itself ("Deploy on 5 May at 10:00"): only one that says no
    # answer is a decoy.
    evidence = [normalise(piece) for piece in _evidence_pieces(conversation, probe)]
    found += [
        Decoy("session header", text)
        for text, opening in headers
        if opening or not _knows(text, evidence, expectations)
    ]
    sample = _sentence_sample(conversation, probe, key or probe.id, expectations, evidence)
    found += [Decoy("session sentence", text) for text in sample]
    return found


def session_headers(conversation: Conversation) -> list[tuple[str, bool]]:
    """(line, whether it opens a chat): the opening line of each chat of a
    multi-session conversation when it is a short one with a date (LoCoMo's
    ``(session 4, 10:37 am on 27 June, 2023)``), and every short line that
    is little but a date or time; distinct, at most MAX_HEADERS (seeded
    sample).  Found once per conversation, kept on it."""
    cached: list[tuple[str, bool]] | None = conversation.__dict__.get("_ctxeval_decoy_headers")
    if cached is None:
        cached = conversation.__dict__["_ctxeval_decoy_headers"] = _headers(conversation)
    return cached


def _headers(conversation: Conversation) -> list[tuple[str, bool]]:
    lines: list[tuple[str, bool]] = []
    chats = [_first_non_system(conversation), *conversation.session_starts]
    for start in chats if conversation.session_starts else []:
        if start is None or start >= len(conversation.messages):
            continue
        texts = message_texts(conversation.messages[start])
        first = texts[0].strip().splitlines()[0].strip() if texts and texts[0].strip() else ""
        if first and len(first) <= HEADER_CHARS and _HAS_DATE.search(first):
            lines.append((first, True))
    short = (
        line
        for message in conversation.messages
        for text in message_texts(message)
        for line in map(str.strip, text.splitlines())
        if line and len(line) <= HEADER_CHARS
    )
    # Each distinct line once, in order: tool outputs repeat theirs ("{", "status": "ok").
    lines += [(line, False) for line in dict.fromkeys(short) if _is_timestamp(line)]
    opening = {text for text, first in lines if first}
    distinct = [(t, t in opening) for t in dict.fromkeys(text for text, _ in lines)]
    if len(distinct) <= MAX_HEADERS:
        return distinct
    picked = sorted(
        random.Random(f"{conversation.id}\0headers").sample(range(len(distinct)), MAX_HEADERS)
    )
    return [distinct[i] for i in picked]


def _first_non_system(conversation: Conversation) -> int | None:
    return next((i for i, m in enumerate(conversation.messages) if m.get("role") != "system"), None)


def _is_timestamp(line: str) -> bool:
    if _surely_wordy(line) or not _HAS_DATE.search(line):
        return False
    rest = _WORD.findall(_DATE_PART.sub(" ", line))
    return len(rest) <= _TIMESTAMP_OTHER_WORDS


def _surely_wordy(line: str) -> bool:
    """Whether ``line`` has more words than a timestamp line may besides its
    date, found without the date regexes (a log is thousands of such lines).

    A word whose letters the date parts do not all take alone ("deploy",
    "30T12") keeps a word in the line too: inside a word there is no word
    boundary for a month or a weekday to match at."""
    other = 0
    for word in _WORD.findall(line):
        kept = _KEEPS_A_WORD.get(word)
        if kept is None:
            if len(_KEEPS_A_WORD) >= _WORDS_REMEMBERED:
                _KEEPS_A_WORD.clear()
            kept = _KEEPS_A_WORD[word] = _WORD.search(_DATE_PART.sub(" ", word)) is not None
        if kept:
            other += 1
            if other > _TIMESTAMP_OTHER_WORDS:
                return True
    return False


# Word -> whether it is more than date parts (see _surely_wordy).
_KEEPS_A_WORD: dict[str, bool] = {}
_WORDS_REMEMBERED = 100_000


def _sentence_sample(
    conversation: Conversation,
    probe: ProbeCase,
    key: str,
    expectations: list[Expectation],
    evidence: list[str],
) -> list[str]:
    pool = _session_sentences(conversation)
    rng = random.Random(f"{conversation.id}\0{key}")
    order = seeded_order(rng, len(pool)) if len(pool) > SENTENCE_SAMPLE else range(len(pool))
    picked: list[str] = []
    for index in order:
        if not _knows(pool[index], evidence, expectations):
            picked.append(pool[index])
            if len(picked) == SENTENCE_SAMPLE:
                break
    return picked


def seeded_order(rng: random.Random, count: int) -> Iterator[int]:
    """``range(count)`` in the order ``rng.sample(range(count), count)`` gives,
    drawn one at a time: a long session's pool has tens of thousands of
    sentences, and the sample stops after a few dozen.  The same draws as
    ``sample`` (a Fisher-Yates shuffle of a pool, with ``randrange``), the
    pool's moved entries kept in a dict."""
    moved: dict[int, int] = {}
    for drawn in range(count):
        last = count - drawn - 1
        at = rng.randrange(last + 1)
        yield moved.get(at, at)
        moved[at] = moved.get(last, last)


def _knows(text: str, evidence: list[str], expectations: list[Expectation]) -> bool:
    """Whether ``text`` is part of the probe's evidence (normalised pieces)
    or says the answer: knowledge, not a decoy."""
    if evidence:
        flat = normalise(text)
        if any(flat in piece or piece in flat for piece in evidence):
            return True
    return any(_states(text, e) for e in expectations)


def _session_sentences(conversation: Conversation) -> list[str]:
    cached: list[str] | None = conversation.__dict__.get("_ctxeval_decoy_sentences")
    if cached is None:
        texts = (
            text
            for message in conversation.messages
            if message.get("role") != "system"
            for text in message_texts(message)
        )
        # Sentences come stripped; the distinct ones in order, filtered and
        # gathered in C (a long session has tens of thousands).
        found = chain.from_iterable(filter(_TWO_WORDS.search, sentences(t)) for t in texts)
        cached = conversation.__dict__["_ctxeval_decoy_sentences"] = list(dict.fromkeys(found))
    return cached


def _evidence_pieces(conversation: Conversation, probe: ProbeCase) -> list[str]:
    """The text of every fact the probe rests on: its needle, its constraint
    and the needles it cites as evidence."""
    named = {probe.needle, probe.constraint, *probe.evidence} - {None}
    return [
        p for fact in conversation.facts if fact.id in named for p in fact.pieces() if p.strip()
    ]


def _states(text: str, expect: Expectation) -> bool:
    """Whether ``text`` says what the expectation asks for: one of its
    expected strings whole, or a match of its regex."""
    wanted = [
        expect.contains,
        expect.equals,
        *(expect.contains_any or ()),
        *(expect.contains_all or ()),
    ]
    wanted += [expect.f1] if isinstance(expect.f1, str) else list(expect.f1 or ())
    if any(s is not None and occurs(s, text, expect.case_sensitive) for s in wanted):
        return True
    if expect.regex is None:
        return False
    try:
        return matches(expect.regex, text, expect.case_sensitive)
    except UncheckableAnswer:
        return True  # cannot tell: not a decoy


def _meets(text: str, expectations: list[Expectation], question: str) -> bool:
    try:
        return all(not check_answer(text, e, question) for e in expectations)
    except UncheckableAnswer:
        return False  # a check that cannot finish on a decoy does not pass it
