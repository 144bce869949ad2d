"""``locomo``: LoCoMo long conversations with their QA items as probes.

speaker_a speaks as the user and speaker_b as the assistant; every turn is
prefixed with the speaker's name, so who said what survives the mapping.
Each LoCoMo session becomes a chat of a multi-session scenario, opening with
a user turn naming it and its date, because many questions are about when
something happened."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from ._common import (
    Draft,
    TranscriptError,
    Where,
    clean_text,
    json_items,
    require_object,
    type_name,
)

FORMAT = "locomo"
ABSTENTION = r"not mentioned|no information|could not find|don['’]t know|not (?:stated|say)"
_SESSION = re.compile(r"session_(\d+)")


def import_locomo(text: str, source: str) -> list[Draft]:
    stem = PurePath(source).stem
    drafts = []
    for where, value in json_items(text, source):
        item = require_object(value, source, where, "a conversation object")
        drafts.append(Draft(where, _scenario(item, f"{stem}-{where.item}", source, where)))
    return drafts


def _scenario(item: dict[str, Any], fallback_id: str, source: str, where: Where) -> dict[str, Any]:
    conversation = item.get("conversation")
    if not isinstance(conversation, dict):
        problem = (
            "missing 'conversation'"
            if conversation is None
            else (f"'conversation': expected an object, got {type_name(conversation)}")
        )
        raise TranscriptError(source, where, problem)
    sessions = _sessions(conversation, source, where)
    speaker_a, speaker_b = _speakers(conversation, sessions)
    chats: list[dict[str, Any]] = []
    for k, dialog in sessions:
        when = conversation.get(f"session_{k}_date_time")
        header = (
            f"(session {k}, {clean_text(str(when))})"
            if when not in (None, "")
            else f"(session {k})"
        )
        # Each LoCoMo session is a separate chat: strategies are told when
        # one ends (long-term memory is what LoCoMo measures).
        turns: list[dict[str, Any]] = [{"user": header}]
        for j, entry in enumerate(dialog):
            turns.append(_turn(entry, speaker_b, source, where, f"conversation.session_{k}[{j}]"))
        chats.append({"label": header.strip("()"), "turns": turns})
    probes, categories = _probes(item.get("qa"), source, where)
    sample_id = item.get("sample_id")
    scenario_id = str(sample_id) if sample_id not in (None, "") else fallback_id
    description = (
        f"LoCoMo conversation {scenario_id} between {speaker_a} (user) and {speaker_b} "
        f"(assistant): {len(sessions)} session(s), {len(probes)} question(s).\n"
        f"Imported from {PurePath(source).name} {where.describe()} ({FORMAT})."
    )
    tags = ["imported", FORMAT, *(f"category-{c}" for c in categories)]
    return {
        "id": scenario_id,
        "description": description,
        "tags": tags,
        "sessions": chats,
        "probes": probes,
    }


def _sessions(
    conversation: dict[str, Any], source: str, where: Where
) -> list[tuple[int, list[Any]]]:
    """Sessions with turns, in numeric order (session_10 after session_9).
    Date keys without a session, and empty sessions, are ignored."""
    found = []
    for key, value in conversation.items():
        match = _SESSION.fullmatch(key)
        if match is None or value in (None, []):
            continue
        if not isinstance(value, list):
            raise TranscriptError(
                source,
                where,
                f"conversation.{key}: expected a list of turns, got {type_name(value)}",
            )
        found.append((int(match.group(1)), value))
    if not found:
        raise TranscriptError(source, where, "conversation: no session_<k> with turns")
    return sorted(found, key=lambda kv: kv[0])


def _speakers(
    conversation: dict[str, Any], sessions: list[tuple[int, list[Any]]]
) -> tuple[str, str]:
    # Files without speaker_a/speaker_b still name speakers on every turn.
    seen: list[str] = []
    for _, dialog in sessions:
        for entry in dialog:
            name = entry.get("speaker") if isinstance(entry, dict) else None
            if isinstance(name, str) and name and name not in seen:
                seen.append(name)
    a = conversation.get("speaker_a") or (seen[0] if seen else "Speaker A")
    b = conversation.get("speaker_b") or next((s for s in seen if s != a), "Speaker B")
    return str(a), str(b)


def _turn(entry: Any, speaker_b: str, source: str, where: Where, loc: str) -> dict[str, str]:
    if not isinstance(entry, dict):
        raise TranscriptError(
            source, where, f"{loc}: expected a turn object, got {type_name(entry)}"
        )
    speaker = str(entry.get("speaker") or "Unknown")
    text = clean_text(str(entry["text"])) if entry.get("text") not in (None, "") else ""
    caption = entry.get("blip_caption")
    if caption not in (None, ""):
        text = f"{text} [shares a photo: {clean_text(str(caption))}]".strip()
    return {"assistant" if speaker == speaker_b else "user": f"{speaker}: {text}"}


def _probes(qa: Any, source: str, where: Where) -> tuple[list[dict[str, Any]], list[str]]:
    if qa is None or qa == []:
        raise TranscriptError(source, where, "no 'qa' items to use as probes")
    if not isinstance(qa, list):
        raise TranscriptError(source, where, f"'qa': expected a list, got {type_name(qa)}")
    probes, categories = [], set()
    for n, entry in enumerate(qa, 1):
        loc = f"qa[{n - 1}]"
        if not isinstance(entry, dict):
            raise TranscriptError(
                source, where, f"{loc}: expected an object, got {type_name(entry)}"
            )
        question = entry.get("question")
        if not isinstance(question, str) or not question.strip():
            raise TranscriptError(source, where, f"{loc}: missing 'question'")
        probe: dict[str, Any] = {"id": f"qa-{n}", "user": clean_text(question)}
        category = entry.get("category")
        if category not in (None, ""):
            categories.add(str(category))
        expect = _expectation(entry, str(category))
        if expect:
            probe["expect"] = expect
        probes.append(probe)
    # Numeric categories in numeric order, others after them.
    ordered = sorted(categories, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    return probes, ordered


def _expectation(entry: dict[str, Any], category: str) -> dict[str, Any]:
    """Category 5 questions are about things never said: the right answer is
    an abstention, and the tempting wrong one is ``adversarial_answer``.
    Items that lost their category are recognised by that field alone."""
    if category == "5" or ("adversarial_answer" in entry and "answer" not in entry):
        expect: dict[str, Any] = {"regex": ABSTENTION}
        wrong = entry.get("adversarial_answer")
        if wrong not in (None, ""):
            banned = _answers(wrong)
            expect["not_contains"] = banned[0] if len(banned) == 1 else banned
        return expect
    answers = _answers(entry.get("answer"))
    return {"contains_any": answers} if answers else {}


def _answers(value: Any) -> list[str]:
    """Answers as strings: numbers (years, counts) included."""
    values = value if isinstance(value, list) else [value]
    return [clean_text(str(v)).strip() for v in values if v not in (None, "") and str(v).strip()]
