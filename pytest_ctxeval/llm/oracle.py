"""The oracle mock model: deterministic, and honest about what it was sent.

It answers from the request only: message content, the string values of
tool-call arguments and the tool definitions (a memory listing's previews
included) are all context it reads, as sentences.

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
- Memory: a preview in the ``retrieve_memory`` listing (in the tool's
  description, or in a "Memory index" message) is an excerpt.  When a
  preview holds question words that the rest of the request does not cover,
  it calls ``retrieve_memory`` for that memory rather than answer from the
  excerpt; otherwise previews are read like any other visible text.
- Asked to write code, it follows the library rules it can read in the user
  and system messages and in the tool definitions (see ``codegen``), and
  otherwise makes the obvious choice; the rules show only in what the code
  imports, never quoted back.
- Asked to summarise, it keeps the sentences with identifiers, numbers and
  imperatives.  A request that begins "Summarize" is one; so is a prompt that
  hands over the transcript after a ``Messages to summarize:`` line, as
  LangChain's ``SummarizationMiddleware`` does, and then only the transcript
  is summarised, not the prompt's own instructions; and a last user message
  that opens "You are ... tasked with summarizing", as Inspect's compaction
  asks after the conversation it wants summarised.

Strategies differ under it only because of what they keep.

Speed: what a text yields (its candidate sentences and their words, what a
summary keeps of it) is worked out once per distinct text and reused by
every later request that shows the same text: consecutive windows, and the
strategy's request and the full-context one, share nearly all of it.  Only
the question-specific scoring is per request, and it looks at question words
only: a sentence's words are worked out only when its text can hold one of
them.  Answers are the same as working everything out afresh.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..messages import content_text

# The lost-in-the-middle attention lives in attention.py; imported from here too.
from .attention import Attention as Attention
from .attention import lost_in_middle_attention as lost_in_middle_attention
from .attention import lost_in_middle_probability as lost_in_middle_probability
from .codegen import write_code
from .oracle_files import file_reply
from .request_text import last_index, message_texts, tool_texts
from .text import has_term, sentences, terms

RETRIEVE_TOOL = "retrieve_memory"
SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|condense|compress)\b", re.IGNORECASE)
# Where LangChain's summary prompt hands over the transcript it wants summarised,
# and the XML tags it wraps each message in (markup, not conversation).
TRANSCRIPT_HANDOVER = re.compile(r"^Messages to summari[sz]e:\s*$", re.IGNORECASE | re.MULTILINE)
SUMMARY_TASK = re.compile(r"^\s*You are [^\n.]*\btasked with summari[sz]ing\b", re.IGNORECASE)
_TRANSCRIPT_TAG = re.compile(r"</?(?:messages?|tool_calls?)\b[^>]*>")
# How a listing sent as a message begins (headtail's INDEX_INTRO).
MEMORY_INDEX = "Memory index"
_LISTING = re.compile(r"^id=(?P<id>\S+) \|.*?\| preview: (?P<preview>.*)$", re.MULTILINE)
# How a preview joins its excerpts (the head, then lines that stand out):
# each is read on its own, so an excerpt that asks a question does not hide
# the others (fact survival counts every excerpt as visible).
PREVIEW_EXCERPTS = " … "
_MARKER_START = "[… "
_MARKER = re.compile(r"\[… \d+ chars stored as memory \S+; call retrieve_memory\(id=\"\S+\"\) …\]")
_TASK = re.compile(
    r"^\s*(write|create|implement|build|generate|make|draft|fix|add|refactor|code|produce)\b",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(r"\b(never|always|must|do not|don't|only|avoid|prefer)\b", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Z_]{3,}|\d|[a-z]+_[a-z_]+|[a-z]+[A-Z]\w*|`")
NO_ANSWER = "I could not find that in our conversation."
# What "answering the same question" takes (see the module docstring): a
# share of the best score, and how many of its question words.
SAME_QUESTION_SHARE = 1 / 4
SAME_QUESTION_TERMS = 2
# Distinct texts whose analysis is kept (a long session has a few thousand).
ANALYSED_TEXTS = 20_000


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class _Candidate:
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


def _fragments(q_terms: set[str]) -> tuple[str, ...]:
    """What a sentence's lower-cased text must contain for it to have one of
    ``q_terms``: a term is a lower-cased word with at most one letter changed
    at its end ("policies" is "policy", "ports" is "port"), so all of the term
    but its last letter is in the sentence."""
    return tuple(t[:-1] if len(t) > 1 else t for t in q_terms)


def respond(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    attention: Attention | None = None,
) -> Reply:
    question_at = last_index(messages, "user")
    question = content_text(messages[question_at]) if question_at is not None else ""
    context = [m for i, m in enumerate(messages) if i != question_at]
    if SUMMARY_REQUEST.match(question):
        return Reply(content=summarise(context + [{"role": "user", "content": question}]))
    if SUMMARY_TASK.match(question):
        return Reply(content=summarise(context))
    handover = TRANSCRIPT_HANDOVER.search(question)
    if handover is not None:
        transcript = _TRANSCRIPT_TAG.sub("\n", question[handover.end() :])
        return Reply(content=summarise(context + [{"role": "user", "content": transcript}]))

    candidates = _candidates(context, tools or [])
    q_terms = set(terms(question))
    memory_id = _memory_to_retrieve(messages, candidates, q_terms, attention)
    if memory_id is not None:
        call_id = "call_" + hashlib.sha256(f"{memory_id}|{question}".encode()).hexdigest()[:12]
        arguments = json.dumps({"id": memory_id})
        return Reply(
            tool_calls=[
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": RETRIEVE_TOOL, "arguments": arguments},
                }
            ]
        )
    if _TASK.match(question):
        code = write_code(question, _instructions(context, tools or []))
        written = file_reply(messages, question_at, tools or [], question, code)
        if written is not None:  # a write_file tool is offered: the code goes there
            return Reply(content=written[0], tool_calls=written[1])
        return Reply(content=code)
    answer = _best_sentences(candidates, q_terms, attention)
    return Reply(content="\n".join(c.text for c in answer) if answer else NO_ANSWER)


def summarise(messages: list[dict[str, Any]], max_sentences: int = 40) -> str:
    """Extractive summary: sentences with identifiers, numbers or imperatives
    (tool-call arguments included: they are part of the conversation)."""
    keep: list[str] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        for text in message_texts(message):
            keep.extend(_summary_sentences(text))
    keep = list(dict.fromkeys(keep))
    if len(keep) > max_sentences:
        # Keep the earliest half (goals, constraints) and the latest half.
        half = max_sentences // 2
        keep = keep[:half] + keep[-half:]
    return "Summary of earlier conversation:\n" + "\n".join(f"- {s}" for s in keep)


@lru_cache(maxsize=ANALYSED_TEXTS)
def _summary_sentences(text: str) -> tuple[str, ...]:
    """The sentences of ``text`` an extractive summary keeps."""
    return tuple(
        sentence
        for sentence in sentences(text)
        if not (SUMMARY_REQUEST.match(sentence) or _MARKER.search(sentence))
        and (_IDENTIFIER.search(sentence) or _INSTRUCTION.search(sentence))
    )


@lru_cache(maxsize=ANALYSED_TEXTS)
def _text_candidates(text: str) -> tuple[str, ...]:
    """The sentences of ``text`` that can answer something: statements with
    at least one content word.  Only strings in a tuple: the garbage
    collector stops tracking such tuples, so a full cache costs its full
    passes nothing."""
    out = []
    for sentence in sentences(text):
        if sentence.endswith("?"):
            continue
        if _MARKER_START in sentence:  # the regexes only where a marker can be
            if _MARKER.fullmatch(sentence.strip()):
                continue
            sentence = _MARKER.sub(" ", sentence).strip()
        if has_term(sentence):
            out.append(sentence)
    return tuple(out)


@lru_cache(maxsize=ANALYSED_TEXTS)
def _sentence_terms(sentence: str) -> frozenset[str]:
    return frozenset(terms(sentence))


@lru_cache(maxsize=ANALYSED_TEXTS)
def _plain_terms(sentence: str) -> tuple[str, ...]:
    """A sentence's words in order, numbers left out (see _names_something_else)."""
    return tuple(t for t in terms(sentence) if not any(ch.isdigit() for ch in t))


def _candidates(context: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[_Candidate]:
    out: list[_Candidate] = []

    def add(text: str, memory_id: str | None = None) -> None:
        for sentence in _text_candidates(text):
            out.append(_Candidate(sentence, len(out), memory_id))

    def add_listing(text: str) -> None:
        for line in text.splitlines():
            listed = _LISTING.match(line.strip())
            if listed:
                for excerpt in listed["preview"].split(PREVIEW_EXCERPTS):
                    add(excerpt, memory_id=listed["id"])
            else:
                add(line)

    can_retrieve = any(_is_retrieve_tool(tool) for tool in tools)
    for tool in tools:
        for text in tool_texts(tool):
            if _is_retrieve_tool(tool):
                add_listing(text)
            else:
                for line in text.splitlines():
                    add(line)
    for message in context:
        for text in message_texts(message):
            # A memory listing sent as a message (headtail's index) is read
            # like one in the tool's description: its previews are excerpts.
            if can_retrieve and text.startswith(MEMORY_INDEX):
                add_listing(text)
            else:
                add(text)
    return out


def _instructions(context: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[str]:
    """Where rules can be read, one text per message (a rule and the sentence
    that completes it belong together): what the user and the system said,
    and each line of the tool definitions (a memory preview can show a rule
    from an earlier chat)."""
    said = [
        _MARKER.sub(" ", content_text(m))
        for m in context
        if m.get("role") in ("system", "user") and content_text(m).strip()
    ]
    return said + [
        line for tool in tools for text in tool_texts(tool) for line in text.splitlines()
    ]


def _best_sentences(
    candidates: list[_Candidate], q_terms: set[str], attention: Attention | None
) -> list[_Candidate]:
    """The best sentence (the latest of those answering the same question),
    plus a second one if it covers question terms the first one misses."""
    if not q_terms or not candidates:
        return []
    # Only question words score, so only their document frequencies matter:
    # the weights are idf_weights' over all candidates, for those words.
    fragments = _fragments(q_terms)
    shared = [(c, q_terms.intersection(c.terms)) for c in candidates if c.may_share(fragments)]
    shared = [(c, words) for c, words in shared if words]
    df: dict[str, int] = {}
    for _, words in shared:
        for t in words:
            df[t] = df.get(t, 0) + 1
    n = len(candidates)
    idf = {t: math.log(1 + n / count) for t, count in df.items()}
    scores = {c.position: sum(idf.get(t, 0.0) for t in words) for c, words in shared}

    def score(c: _Candidate) -> float:
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


def _topic(top: _Candidate, q_terms: set[str], df: dict[str, int]) -> set[str]:
    """The best match's question words that the most sentences use (``df``:
    how many sentences use each question word)."""
    asked = q_terms.intersection(top.terms)
    counts = {t: df.get(t, 0) for t in asked}
    most = max(counts.values(), default=0)
    return {t for t, n in counts.items() if n == most}


def _same_question(
    top: _Candidate, other: _Candidate, q_terms: set[str], topic: set[str], share: float
) -> bool:
    """Whether ``other`` answers the question ``top`` answers (module docstring)."""
    if share < SAME_QUESTION_SHARE or not topic.issubset(other.terms):
        return False
    asked = q_terms.intersection(top.terms)
    if len(asked.intersection(other.terms)) < min(SAME_QUESTION_TERMS, len(asked)):
        return False
    return not _names_something_else(top, other, q_terms)


def _names_something_else(top: _Candidate, other: _Candidate, q_terms: set[str]) -> bool:
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


def _memory_to_retrieve(
    messages: list[dict[str, Any]],
    candidates: list[_Candidate],
    q_terms: set[str],
    attention: Attention | None,
) -> str | None:
    """A memory whose preview promises question words that the answer from
    the rest of the request does not cover (previews are excerpts)."""
    previews = [c for c in candidates if c.memory_id is not None]
    if not previews or not q_terms:
        return None
    answer = _best_sentences([c for c in candidates if c.memory_id is None], q_terms, attention)
    covered = set().union(*(c.terms for c in answer)) & q_terms if answer else set()
    if covered == q_terms:
        return None
    already = _retrieved_ids(messages)
    gains: dict[str, set[str]] = {}
    fragments = _fragments(q_terms)
    for c in previews:
        if c.memory_id is not None and c.memory_id not in already and c.may_share(fragments):
            gains.setdefault(c.memory_id, set()).update(q_terms.intersection(c.terms) - covered)
    best_id, best_gain = None, 0
    for memory_id, gain in gains.items():
        if len(gain) > best_gain:
            best_id, best_gain = memory_id, len(gain)
    return best_id


def _is_retrieve_tool(tool: dict[str, Any]) -> bool:
    function = tool.get("function")
    return isinstance(function, dict) and function.get("name") == RETRIEVE_TOOL


def _retrieved_ids(messages: list[dict[str, Any]]) -> set[str]:
    ids = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            if function.get("name") == RETRIEVE_TOOL:
                try:
                    ids.add(str(json.loads(function.get("arguments") or "{}").get("id")))
                except (ValueError, AttributeError):
                    continue
    return ids


def echo(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m.get('role')}: {content_text(m)}" for m in messages)
