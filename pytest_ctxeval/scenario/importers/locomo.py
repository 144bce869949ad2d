"""``locomo``: LoCoMo long conversations with their QA items as probes.

LoCoMo is published as one JSON list of samples (``sample_id``,
``conversation``, ``qa``) and as one file per conversation, with the
speakers, the sessions and ``qa`` at the top level; both import.

speaker_a speaks as the user and speaker_b as the assistant; every turn is
prefixed with the speaker's name, so who said what survives the mapping.
Each LoCoMo session becomes a chat of a multi-session scenario (or, with
``sessions="join"``, all sessions one chat), opening with a user turn naming
it and its date, because many questions are about when something happened.

Answers are scored as the benchmark scores them: token F1 against the gold
answer (``f1``), and an abstention for the adversarial category 5
(``abstains``).  The turns a QA item cites as ``evidence`` become needles,
so fact survival reports, model-free, whether a strategy kept them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ...text import occurs
from ._common import (
    EVIDENCE_PREFIX,
    Draft,
    TranscriptError,
    Where,
    clean_text,
    json_items,
    require_object,
    type_name,
)

FORMAT = "locomo"
SESSION_MODES = ("split", "join")
ADVERSARIAL = "5"
_SESSION = re.compile(r"session_(\d+)")
# "D1:3", and the odd spellings of the published files: "D30:05", "D8:6; D9:17".
_DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)


def import_locomo(text: str, source: str, *, sessions: str = "split") -> list[Draft]:
    """``sessions``: "split" keeps each LoCoMo session a chat of its own,
    "join" makes them one chat (the date headers stay, as text)."""
    if sessions not in SESSION_MODES:
        raise ValueError(f"sessions={sessions!r}; expected one of {', '.join(SESSION_MODES)}")
    stem = PurePath(source).stem
    items = json_items(text, source)
    drafts = []
    for where, value in items:
        item = require_object(value, source, where, "a conversation object")
        # A file of one conversation is named after it (conv-26.json -> conv-26).
        fallback = (
            stem if len(items) == 1 and "conversation" not in item else f"{stem}-{where.item}"
        )
        drafts.append(Draft(where, _scenario(item, fallback, source, where, sessions)))
    return drafts


@dataclass
class _Turns:
    """The scenario's turns, and where each LoCoMo turn landed: its dialogue
    id -> (1-based message index in the whole session, the turn mapping)."""

    chats: list[dict[str, Any]] = field(default_factory=list)
    placed: dict[tuple[int, int], tuple[int, dict[str, str]]] = field(default_factory=dict)
    count: int = 0


def _scenario(
    item: dict[str, Any], fallback_id: str, source: str, where: Where, mode: str
) -> dict[str, Any]:
    conversation = _conversation(item, source, where)
    sessions = _sessions(conversation, source, where, _prefix(item))
    speaker_a, speaker_b = _speakers(conversation, sessions)
    built = _Turns()
    for k, dialog in sessions:
        when = conversation.get(f"session_{k}_date_time")
        header = (
            f"(session {k}, {clean_text(str(when))})"
            if when not in (None, "")
            else f"(session {k})"
        )
        turns: list[dict[str, Any]] = [{"user": header}]
        built.count += 1
        for j, entry in enumerate(dialog):
            turn = _turn(entry, speaker_b, source, where, f"{_prefix(item)}session_{k}[{j}]")
            turns.append(turn)
            built.count += 1
            key = _dia_key(entry.get("dia_id")) or (k, j + 1)
            built.placed.setdefault(key, (built.count, turn))
        built.chats.append({"label": header.strip("()"), "turns": turns})
    probes, categories, cited = _probes(item.get("qa"), source, where)
    needles, unknown = _evidence(cited, built)
    sample_id = item.get("sample_id")
    scenario_id = str(sample_id) if sample_id not in (None, "") else fallback_id
    lines = [
        f"LoCoMo conversation {scenario_id} between {speaker_a} (user) and {speaker_b} "
        f"(assistant): {len(sessions)} session(s), {len(probes)} question(s)."
    ]
    if mode == "split" and len(sessions) > 1:
        lines.append(
            "The sessions are one relationship over months, imported as separate chats: a "
            "strategy that sees only the latest chat is expected to lose what earlier "
            "sessions said (--sessions=join imports them as one chat)."
        )
    elif len(sessions) > 1:
        lines.append("The sessions are joined into one chat; their date headers are kept.")
    if needles:
        lines.append(
            f"{len(needles)} turn(s) that QA items cite as evidence are left empty and "
            "planted as needles (evidence-d<session>-<turn>), so fact survival follows them."
        )
    if unknown:
        lines.append(f"Evidence naming no turn, left out: {', '.join(unknown)}.")
    lines.append(f"Imported from {PurePath(source).name} {where.describe()} ({FORMAT}).")
    data: dict[str, Any] = {
        "id": scenario_id,
        "description": "\n".join(lines),
        "tags": ["imported", FORMAT, *(f"category-{c}" for c in categories)],
    }
    if mode == "join":
        data["turns"] = [turn for chat in built.chats for turn in chat["turns"]]
    else:
        data["sessions"] = built.chats
    if needles:
        data["needles"] = needles
    data["probes"] = probes
    return data


def _conversation(item: dict[str, Any], source: str, where: Where) -> dict[str, Any]:
    """The object holding the sessions: ``conversation``, or the item itself
    in the one-conversation-per-file layout."""
    conversation = item.get("conversation")
    if conversation is None and any(_SESSION.fullmatch(str(key)) for key in item):
        return item
    if not isinstance(conversation, dict):
        problem = (
            "missing 'conversation' (or session_<k> lists at the top level)"
            if conversation is None
            else (f"'conversation': expected an object, got {type_name(conversation)}")
        )
        raise TranscriptError(source, where, problem)
    return conversation


def _prefix(item: dict[str, Any]) -> str:
    return "conversation." if "conversation" in item else ""


def _dia_key(value: Any) -> tuple[int, int] | None:
    match = _DIA_ID.fullmatch(str(value).strip()) if value not in (None, "") else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _evidence(
    cited: list[tuple[dict[str, Any], list[str], list[str]]], built: _Turns
) -> tuple[list[dict[str, Any]], list[str]]:
    """Needles for the cited turns, in session order, and the citations that
    name no turn.  A cited turn is left empty and its text planted back by the
    needle, at the same message: the session reads as before, and fact
    survival follows the turn.  ``cited``: (probe, its evidence strings, its
    gold answers), in QA order; each probe gets ``evidence`` naming its needles."""
    answers: dict[tuple[int, int], list[str]] = {}
    unknown: list[str] = []
    for probe, evidence, golds in cited:
        names: list[str] = []
        for raw in evidence:
            keys = [(int(s), int(t)) for s, t in _DIA_ID.findall(raw)]
            if not keys:
                unknown.append(raw)
            for key in keys:
                if key not in built.placed:
                    unknown.append(f"D{key[0]}:{key[1]}")
                    continue
                _, turn = built.placed[key]
                if not next(iter(turn.values())).split(": ", 1)[-1].strip():
                    continue  # a turn with no text (nor photo) holds no evidence
                said = answers.setdefault(key, [])
                said.extend(g for g in golds if g not in said)
                name = _needle_id(key)
                if name not in names:
                    names.append(name)
        if names:
            probe["evidence"] = names
    needles = []
    for key in sorted(answers):
        index, turn = built.placed[key]
        role = next(iter(turn))
        text = turn[role]
        turn[role] = ""
        needle: dict[str, Any] = {"id": _needle_id(key), "text": text, "turn": index}
        found = [a for a in answers[key] if occurs(a, text)]
        if found:
            needle["answer"] = found[0] if len(found) == 1 else found
        needles.append(needle)
    return needles, list(dict.fromkeys(unknown))


def _needle_id(key: tuple[int, int]) -> str:
    return f"{EVIDENCE_PREFIX}d{key[0]}-{key[1]}"


def _sessions(
    conversation: dict[str, Any], source: str, where: Where, prefix: str
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
                f"{prefix}{key}: expected a list of turns, got {type_name(value)}",
            )
        found.append((int(match.group(1)), value))
    if not found:
        raise TranscriptError(
            source,
            where,
            f"{prefix[:-1]}: no session_<k> with turns" if prefix else "no session_<k> with turns",
        )
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


def _probes(
    qa: Any, source: str, where: Where
) -> tuple[list[dict[str, Any]], list[str], list[tuple[dict[str, Any], list[str], list[str]]]]:
    """The probes, the categories in numeric order, and per probe the
    evidence it cites and its gold answers (for the evidence needles)."""
    if qa is None or qa == []:
        raise TranscriptError(source, where, "no 'qa' items to use as probes")
    if not isinstance(qa, list):
        raise TranscriptError(source, where, f"'qa': expected a list, got {type_name(qa)}")
    probes, categories, cited = [], set(), []
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
        adversarial = _adversarial(entry, str(category))
        golds = [] if adversarial else _answers(entry.get("answer"))
        if adversarial:
            probe["expect"] = {"abstains": True}
        elif golds:
            probe["expect"] = {"f1": golds[0] if len(golds) == 1 else golds}
        probes.append(probe)
        cited.append((probe, _evidence_ids(entry.get("evidence")), golds))
    # Numeric categories in numeric order, others after them.
    ordered = sorted(categories, key=lambda c: (not c.isdigit(), int(c) if c.isdigit() else 0, c))
    return probes, ordered, cited


def _adversarial(entry: dict[str, Any], category: str) -> bool:
    """Category 5 questions are about things never said: the right answer is
    an abstention (``adversarial_answer`` is the tempting wrong one).  Items
    that lost their category are recognised by that field alone."""
    return category == ADVERSARIAL or ("adversarial_answer" in entry and "answer" not in entry)


def _evidence_ids(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [str(v).strip() for v in values if v not in (None, "") and str(v).strip()]


def _answers(value: Any) -> list[str]:
    """Answers as strings: numbers (years, counts) included."""
    values = value if isinstance(value, list) else [value]
    return [clean_text(str(v)).strip() for v in values if v not in (None, "") and str(v).strip()]
