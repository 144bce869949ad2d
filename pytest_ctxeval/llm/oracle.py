"""The oracle mock model: deterministic, and honest about what it was sent.

It answers from the messages of the request only: the best-matching
sentence(s) of the visible context by lexical overlap with the question.  When
the answer is not fully visible but a stored memory's preview promises more,
it calls ``retrieve_memory``.  Asked to write something, it also repeats the
visible instructions it is following, so a forgotten constraint shows.  Asked
to summarise, it keeps the sentences with identifiers, numbers and
imperatives.  Strategies differ under it only because of what they keep.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..messages import content_text
from .codegen import write_code
from .text import idf_weights, sentences, terms

RETRIEVE_TOOL = "retrieve_memory"
SUMMARY_REQUEST = re.compile(r"^\s*(summari[sz]e|condense|compress)\b", re.IGNORECASE)
_LISTING = re.compile(r"^id=(?P<id>\S+) \|.*?\| preview: (?P<preview>.*)$", re.MULTILINE)
_MARKER = re.compile(r"\[… \d+ chars stored as memory \S+; call retrieve_memory\(id=\"\S+\"\) …\]")
_TASK = re.compile(
    r"^\s*(write|create|implement|build|generate|make|draft|fix|add|refactor|code|produce)\b",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(r"\b(never|always|must|do not|don't|only|avoid|prefer)\b", re.IGNORECASE)
_IDENTIFIER = re.compile(r"[A-Z_]{3,}|\d|[a-z]+_[a-z_]+|[a-z]+[A-Z]\w*|`")
NO_ANSWER = "I could not find that in our conversation."

# Decides whether the model "attends" a candidate sentence (lost-in-middle);
# arguments: relative position 0..1, a stable key for the random draw.
Attention = Callable[[float, str], bool]


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Candidate:
    text: str
    terms: frozenset[str]
    position: int
    from_instruction_role: bool


def respond(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    attention: Attention | None = None,
) -> Reply:
    question_at = _last_index(messages, "user")
    question = content_text(messages[question_at]) if question_at is not None else ""
    context = [m for i, m in enumerate(messages) if i != question_at]
    if SUMMARY_REQUEST.match(question):
        return Reply(content=summarise(context + [{"role": "user", "content": question}]))

    candidates = _candidates(context)
    q_terms = set(terms(question))
    answer_lines = _best_sentences(candidates, q_terms, attention)

    memory_id = _memory_to_retrieve(messages, tools or [], q_terms, answer_lines, candidates)
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

    parts: list[str] = []
    if _TASK.match(question):
        rules = [
            c.text for c in candidates if c.from_instruction_role and _INSTRUCTION.search(c.text)
        ]
        rules = list(dict.fromkeys(rules))
        if rules:
            parts.append("Following your instructions: " + " ".join(rules))
        parts.append(write_code(question, rules))
        return Reply(content="\n".join(parts))
    parts.extend(c.text for c in answer_lines)
    return Reply(content="\n".join(parts) if parts else NO_ANSWER)


def summarise(messages: list[dict[str, Any]], max_sentences: int = 40) -> str:
    """Extractive summary: sentences with identifiers, numbers or imperatives."""
    keep: list[str] = []
    for message in messages:
        if message.get("role") == "system":
            continue
        for sentence in sentences(content_text(message)):
            if SUMMARY_REQUEST.match(sentence) or _MARKER.search(sentence):
                continue
            if _IDENTIFIER.search(sentence) or _INSTRUCTION.search(sentence):
                keep.append(sentence)
    keep = list(dict.fromkeys(keep))
    if len(keep) > max_sentences:
        # Keep the earliest half (goals, constraints) and the latest half.
        half = max_sentences // 2
        keep = keep[:half] + keep[-half:]
    return "Summary of earlier conversation:\n" + "\n".join(f"- {s}" for s in keep)


def _candidates(context: list[dict[str, Any]]) -> list[_Candidate]:
    out: list[_Candidate] = []
    for message in context:
        role = message.get("role")
        for sentence in sentences(content_text(message)):
            if sentence.endswith("?") or _MARKER.fullmatch(sentence.strip()):
                continue
            sentence = _MARKER.sub(" ", sentence).strip()
            found = frozenset(terms(sentence))
            if found:
                out.append(_Candidate(sentence, found, len(out), role in ("system", "user")))
    return out


def _best_sentences(
    candidates: list[_Candidate], q_terms: set[str], attention: Attention | None
) -> list[_Candidate]:
    """The best sentence, plus a second one if it covers question terms the
    first one misses."""
    if not q_terms or not candidates:
        return []
    idf = idf_weights(set(c.terms) for c in candidates)

    def score(c: _Candidate) -> float:
        return sum(idf.get(t, 0.0) for t in q_terms & c.terms)

    # Ties go to the later sentence: the most recent statement of a fact wins.
    ranked = sorted((c for c in candidates if score(c) > 0), key=lambda c: (-score(c), -c.position))
    if attention is not None:
        last = max(len(candidates) - 1, 1)
        ranked = [c for c in ranked if attention(c.position / last, c.text)]
    if not ranked:
        return []
    best = ranked[0]
    chosen = [best]
    missing = q_terms - best.terms
    for c in ranked[1:]:
        if missing & c.terms:
            chosen.append(c)
            break
    return chosen


def _memory_to_retrieve(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    q_terms: set[str],
    answer: list[_Candidate],
    candidates: list[_Candidate],
) -> str | None:
    listing = _memory_listing(tools)
    if not listing or not q_terms:
        return None
    covered = set().union(*(c.terms for c in answer)) & q_terms if answer else set()
    if covered == q_terms:
        return None
    already = _retrieved_ids(messages)
    best_id, best_gain = None, 0
    for memory_id, preview in listing:
        if memory_id in already:
            continue
        gain = len((set(terms(preview)) & q_terms) - covered)
        if gain > best_gain:
            best_id, best_gain = memory_id, gain
    return best_id


def _memory_listing(tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    for tool in tools:
        function = tool.get("function", {})
        if function.get("name") == RETRIEVE_TOOL:
            text = function.get("description", "")
            return [(m["id"], m["preview"]) for m in _LISTING.finditer(text)]
    return []


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


def _last_index(messages: list[dict[str, Any]], role: str) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == role:
            return i
    return None


# Liu et al. 2023, "Lost in the Middle", GPT-3.5-Turbo, 20 documents: accuracy
# with the answer at positions 1/5/10/15/20, against 88.3 % with only the
# relevant document.  Attention probability = accuracy / 88.3.
_LIM_POSITIONS = (0.0, 4 / 19, 9 / 19, 14 / 19, 1.0)
_LIM_ACCURACY = (75.8, 57.2, 53.8, 55.4, 63.2)
_LIM_BEST = 88.3


def lost_in_middle_probability(relative_position: float) -> float:
    x = min(max(relative_position, 0.0), 1.0)
    points = list(zip(_LIM_POSITIONS, _LIM_ACCURACY, strict=True))
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            return y / _LIM_BEST
    return _LIM_ACCURACY[-1] / _LIM_BEST


def lost_in_middle_attention(seed: str) -> Attention:
    """Seeded per request (question), so the same probe repeats exactly."""

    def attend(relative_position: float, sentence: str) -> bool:
        digest = hashlib.sha256(f"{seed}\x00{sentence}".encode()).digest()
        draw = random.Random(digest).random()
        return draw < lost_in_middle_probability(relative_position)

    return attend


def echo(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m.get('role')}: {content_text(m)}" for m in messages)
