"""Inspect AI task for the benchmark workload (run in the peers venv, not the project's).

The samples come from the JSON lines file named by CTXEVAL_BENCH_SAMPLES. The
model is Inspect's own mock, ``mockllm/model``, given an answer function so
that it answers from the messages it is sent (the default mock answers a fixed
string, which no scorer would pass): it returns the earlier sentence that
holds the question's subject, as cheaply as a mock can.
"""

from __future__ import annotations

import os
import re
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

_QUESTION = re.compile(r"What is the (?P<subject>.+?)\?")


def answer_from_prompt(messages: list[ChatMessage], *_: Any) -> ModelOutput:
    question = messages[-1].text
    found = _QUESTION.search(question)
    answer = "I could not find that."
    if found:
        subject = found.group("subject")
        for message in messages[:-1]:
            for sentence in message.text.split(". "):
                if subject in sentence:
                    answer = sentence
    return ModelOutput.from_content(model="mockllm", content=answer)


@task
def needle_recall() -> Task:
    return Task(
        dataset=json_dataset(os.environ["CTXEVAL_BENCH_SAMPLES"]),
        solver=generate(),
        scorer=includes(),
        model=get_model("mockllm/model", custom_outputs=answer_from_prompt),
    )
