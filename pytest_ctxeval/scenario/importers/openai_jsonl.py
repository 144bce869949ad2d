"""``openai-jsonl``: one chat-completions conversation per line.

A line is a list of messages, or an object with ``messages`` (as in
fine-tuning files); the last user message becomes the probe, with no
expectation, so it is scored by agreement with the full-context answer."""

from __future__ import annotations

from pathlib import PurePath

from ._common import Draft, TranscriptError, jsonl_records, type_name
from ._messages import chat_scenario, split_at_last_user

FORMAT = "openai-jsonl"


def import_openai_jsonl(text: str, source: str) -> list[Draft]:
    stem = PurePath(source).stem
    drafts = []
    for where, record in jsonl_records(text, source):
        if isinstance(record, dict) and "messages" in record:
            messages, key = record["messages"], "messages"
            given_id = record.get("id")
        elif isinstance(record, list):
            messages, key, given_id = record, "messages", None
        else:
            raise TranscriptError(
                source,
                where,
                "expected a list of messages or an object with 'messages', "
                f"got {type_name(record)}",
            )
        session = split_at_last_user(messages, source, where, key)
        scenario_id = str(given_id) if given_id not in (None, "") else f"{stem}-line-{where.line}"
        drafts.append(Draft(where, chat_scenario(scenario_id, session, source, where, FORMAT)))
    return drafts
