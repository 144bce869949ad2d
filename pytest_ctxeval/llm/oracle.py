"""The oracle mock model: deterministic, and honest about what it was sent.

It answers from the request only: message content, the string values of
tool-call arguments and the tool definitions (a memory listing's previews
included) are all context it reads, as sentences.

- An answer is the visible sentence that best overlaps the question's content
  words, the latest of those that answer the same question (see
  ``oracle_ranking``).
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

import hashlib
import json
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
from .oracle_ranking import ANALYSED_TEXTS, Candidates, best_sentences, question_fragments
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


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


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
    answer = best_sentences(candidates, q_terms, attention)
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


def _candidates(context: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Candidates:
    out = Candidates()

    def add(text: str, memory_id: str | None = None) -> None:
        out.add(_text_candidates(text), memory_id)

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


def _memory_to_retrieve(
    messages: list[dict[str, Any]],
    candidates: Candidates,
    q_terms: set[str],
    attention: Attention | None,
) -> str | None:
    """A memory whose preview promises question words that the answer from
    the rest of the request does not cover (previews are excerpts)."""
    previews = candidates.of_memories(listed=True)
    if not previews or not q_terms:
        return None
    answer = best_sentences(candidates.of_memories(listed=False), q_terms, attention)
    covered = set().union(*(c.terms for c in answer)) & q_terms if answer else set()
    if covered == q_terms:
        return None
    already = _retrieved_ids(messages)
    gains: dict[str, set[str]] = {}
    fragments = question_fragments(q_terms)
    for c in previews.sharing(fragments):
        if c.memory_id is not None and c.memory_id not in already:
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
