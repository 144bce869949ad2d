"""``multichallenge``: MultiChallenge JSONL (QUESTION_ID, AXIS, CONVERSATION,
TARGET_QUESTION, PASS_CRITERIA).

TARGET_QUESTION is a yes/no rubric for a judge model. Until the harness has a
judge, the rubric goes into the description for people to read, and the
probe is scored by agreement with the full-context answer."""

from __future__ import annotations

from pathlib import PurePath

from ._common import Draft, TranscriptError, clean_text, jsonl_records, require_object
from ._messages import chat_scenario, split_at_last_user
from .writer import slugify

FORMAT = "multichallenge"


def import_multichallenge(text: str, source: str) -> list[Draft]:
    stem = PurePath(source).stem
    drafts = []
    for where, value in jsonl_records(text, source):
        record = require_object(value, source, where)
        if "CONVERSATION" not in record:
            raise TranscriptError(source, where, "missing 'CONVERSATION'")
        session = split_at_last_user(record["CONVERSATION"], source, where, "CONVERSATION")
        question_id = record.get("QUESTION_ID")
        axis = record.get("AXIS")
        known_id = question_id not in (None, "")
        lines = [f"MultiChallenge item {question_id}" if known_id else "MultiChallenge item"]
        if axis:
            lines[0] += f", axis {axis}"
        for key, label in (
            ("TARGET_QUESTION", "Judge question"),
            ("PASS_CRITERIA", "Pass criteria"),
        ):
            if record.get(key) not in (None, ""):
                lines.append(f"{label}: {clean_text(str(record[key]))}")
        scenario_id = f"multichallenge-{question_id}" if known_id else f"{stem}-line-{where.line}"
        tags = [slugify(str(axis), fallback="axis")] if axis else []
        data = chat_scenario(
            scenario_id, session, source, where, FORMAT, description="\n".join(lines), tags=tags
        )
        drafts.append(Draft(where, data))
    return drafts
