"""How the oracle picks its answer among the sentences of a request.

- An answer is the visible sentence that best overlaps the question's content
  words (IDF-weighted), plus a second one if it covers question words the
  first misses.
- Recency: when several sentences answer the same question, the latest one
  wins, not the one with the most words in common ("Update: staging moved to
  port 5433." beats an earlier "The staging database listens on port 5432.").
  A sentence answers the same question as the best match when it
  (1) scores at least a quarter of the best score;
  (2) shares at least two of the question words the best match has (the one,
  if it has only one), among them the topic: those of the best match's
  question words that the most sentences of the request use ("codename" in
  "This year's release codename is Osprey." against "Last year the
  production release codename for the mobile app was Falcon.");
  (3) is not the best match with other names where it has question words:
  "The accounts service timeout is 8 seconds." is about another service than
  "The billing service timeout is 45 seconds." (numbers aside, the two read
  alike but for "accounts" where the question's "billing" stands).
  The latest statement is then the whole answer (no second sentence: the
  question words it lacks are the older statements' words).

Only question words score, so a sentence's words are worked out only when
its text can hold one of them.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator
from functools import lru_cache

from .attention import Attention
from .text import terms

# What "answering the same question" takes (see the module docstring): a
# share of the best score, and how many of its question words.
SAME_QUESTION_SHARE = 1 / 4
SAME_QUESTION_TERMS = 2
# Distinct texts whose analysis is kept (a long session has a few thousand).
ANALYSED_TEXTS = 20_000


class Candidate:
    """A sentence of the request that can answer something."""

    __slots__ = ("text", "position", "memory_id", "_terms", "_lower")

    def __init__(self, text: str, position: int, memory_id: str | None = None) -> None:
        self.text = text
        # Order in the request: tool definitions first (providers send them
        # before the messages), then the messages.
        self.position = position
        # The memory whose listing preview this sentence is from; None otherwise.
        self.memory_id = memory_id
        self._terms: frozenset[str] | None = None
        self._lower: str | None = None

    @property
    def terms(self) -> frozenset[str]:
        """Its distinct words, worked out when first asked for: only the
        sentences that hold a question word are ever asked."""
        if self._terms is None:
            self._terms = _sentence_terms(self.text)
        return self._terms

    def may_share(self, fragments: tuple[str, ...]) -> bool:
        """False when no question word can be among its terms (see _fragments)."""
        if self._lower is None:
            self._lower = self.text.lower()
        return any(fragment in self._lower for fragment in fragments)


class Candidates:
    """A request's candidate sentences, text by text, numbered in request
    order.  A text none of whose sentences can hold a question word (most of
    a long tool output) is passed over whole: its sentences are never made
    into candidates."""

    __slots__ = ("_groups", "_count")

    def __init__(self) -> None:
        # (sentences, position of the first, memory id)
        self._groups: list[tuple[tuple[str, ...], int, str | None]] = []
        self._count = 0

    def add(self, sentences: tuple[str, ...], memory_id: str | None = None) -> None:
        if sentences:
            self._groups.append((sentences, self._count, memory_id))
            self._count += len(sentences)

    def __len__(self) -> int:
        return self._count

    def of_memories(self, listed: bool) -> Candidates:
        """Only the sentences of memory previews (``listed``), or only the
        others; each keeps its position, and they count as a request of
        their own."""
        kept = Candidates()
        kept._groups = [g for g in self._groups if (g[2] is not None) == listed]
        kept._count = sum(len(g[0]) for g in kept._groups)
        return kept

    def sharing(self, fragments: tuple[str, ...]) -> Iterator[Candidate]:
        """The sentences that may hold a question word (``Candidate.may_share``)."""
        for sentences, start, memory_id in self._groups:
            lowered = _lowered(sentences)
            if any(fragment in lowered for fragment in fragments):
                for offset, text in enumerate(sentences):
                    candidate = Candidate(text, start + offset, memory_id)
                    if candidate.may_share(fragments):
                        yield candidate


@lru_cache(maxsize=ANALYSED_TEXTS)
def _lowered(sentences: tuple[str, ...]) -> str:
    # A line break stops any fragment (part of a word) and lower-casing's
    # look at the letters around a sigma alike: each sentence's lower-cased
    # text is in the result as it is.
    return "\n".join(sentences).lower()


def question_fragments(q_terms: set[str]) -> tuple[str, ...]:
    """What a sentence's lower-cased text must contain for it to have one of
    ``q_terms``: a term is a lower-cased word with at most one letter changed
    at its end ("policies" is "policy", "ports" is "port"), so all of the term
    but its last letter is in the sentence."""
    return tuple(t[:-1] if len(t) > 1 else t for t in q_terms)


@lru_cache(maxsize=ANALYSED_TEXTS)
def _sentence_terms(sentence: str) -> frozenset[str]:
    return frozenset(terms(sentence))


@lru_cache(maxsize=ANALYSED_TEXTS)
def _plain_terms(sentence: str) -> tuple[str, ...]:
    """A sentence's words in order, numbers left out (see _names_something_else)."""
    return tuple(t for t in terms(sentence) if not any(ch.isdigit() for ch in t))


def best_sentences(
    candidates: Candidates, q_terms: set[str], attention: Attention | None
) -> list[Candidate]:
    """The best sentence (the latest of those answering the same question),
    plus a second one if it covers question terms the first one misses."""
    if not q_terms or not candidates:
        return []
    # Only question words score, so only their document frequencies matter:
    # the weights are idf_weights' over all candidates, for those words.
    fragments = question_fragments(q_terms)
    shared = [(c, q_terms.intersection(c.terms)) for c in candidates.sharing(fragments)]
    shared = [(c, words) for c, words in shared if words]
    df: dict[str, int] = {}
    for _, words in shared:
        for t in words:
            df[t] = df.get(t, 0) + 1
    n = len(candidates)
    idf = {t: math.log(1 + n / count) for t, count in df.items()}
    scores = {c.position: sum(idf.get(t, 0.0) for t in words) for c, words in shared}

    def score(c: Candidate) -> float:
        return scores.get(c.position, 0.0)

    # Ties go to the later sentence: the most recent statement of a fact wins.
    ranked = sorted((c for c, _ in shared if score(c) > 0), key=lambda c: (-score(c), -c.position))
    if attention is not None:
        last = max(len(candidates) - 1, 1)
        ranked = [c for c in ranked if attention(c.position / last, c.text)]
    if not ranked:
        return []
    top = ranked[0]
    topic = _topic(top, q_terms, df)
    same = [c for c in ranked[1:] if _same_question(top, c, q_terms, topic, score(c) / score(top))]
    best = max([top, *same], key=lambda c: c.position)
    if best is not top:
        # The latest statement is the answer; the words it lacks were the
        # stale statements' words.
        return [best]
    replaced = {c.position for c in same}
    missing = q_terms.difference(best.terms)
    second = next(
        (c for c in ranked[1:] if c.position not in replaced and missing.intersection(c.terms)),
        None,
    )
    return [best] if second is None else [best, second]


def _topic(top: Candidate, q_terms: set[str], df: dict[str, int]) -> set[str]:
    """The best match's question words that the most sentences use (``df``:
    how many sentences use each question word)."""
    asked = q_terms.intersection(top.terms)
    counts = {t: df.get(t, 0) for t in asked}
    most = max(counts.values(), default=0)
    return {t for t, n in counts.items() if n == most}


def _same_question(
    top: Candidate, other: Candidate, q_terms: set[str], topic: set[str], share: float
) -> bool:
    """Whether ``other`` answers the question ``top`` answers (module docstring)."""
    if share < SAME_QUESTION_SHARE or not topic.issubset(other.terms):
        return False
    asked = q_terms.intersection(top.terms)
    if len(asked.intersection(other.terms)) < min(SAME_QUESTION_TERMS, len(asked)):
        return False
    return not _names_something_else(top, other, q_terms)


def _names_something_else(top: Candidate, other: Candidate, q_terms: set[str]) -> bool:
    """``other`` reads like ``top`` with other words where ``top`` has question
    words, numbers aside: the same statement about another thing."""
    a, b = _plain_terms(top.text), _plain_terms(other.text)
    swapped = False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace":
            return False
        if not set(a[i1:i2]) <= q_terms or set(b[j1:j2]) & q_terms:
            return False
        swapped = True
    return swapped
