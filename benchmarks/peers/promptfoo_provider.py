"""promptfoo custom provider (Python) for the benchmark workload: a mock that
answers from the prompt it is sent (the messages as JSON) by returning the
earlier sentence that holds the question's subject."""

from __future__ import annotations

import json
import re
from typing import Any

_QUESTION = re.compile(r"What is the (?P<subject>.+?)\?")


def call_api(prompt: str, options: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    messages = json.loads(prompt)
    found = _QUESTION.search(messages[-1]["content"])
    answer = "I could not find that."
    if found:
        for message in messages[:-1]:
            for sentence in message["content"].split(". "):
                if found.group("subject") in sentence:
                    answer = sentence
    return {"output": answer}
