"""Seeded generators for bulk content: same spec, byte-identical output.

Text generators yield items (rows, lines, tests) from a seeded RNG; the size
knob is an item count (``rows``) or an approximate token count (``tokens``,
about four characters each).  Vocabulary is deliberately bland (no words
like "input", "key", "port") so filler does not accidentally answer a probe.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from typing import Any

from . import vocabulary as v
from .generate_spec import GenerateSpec as GenerateSpec
from .generate_spec import GeneratorKind as GeneratorKind
from .generated_text import _TEXT, _take

# Tokens per item, exchange or word, measured on generated text and rounded
# up: what ``estimated_tokens`` multiplies the counts by.
_TOKENS_PER_ITEM = {
    "json_rows": 45,
    "json_api": 90,
    "spans": 85,
    "log_lines": 23,
    "file_read": 8,
    "test_run": 14,
    "shell": 26,
    "lint": 22,
    "chitchat": 36,
    "coding_session": 500,
}
_TOKENS_PER_FAILURE = 80  # a test_run traceback
_TOKENS_PER_WORD = 1.2


def estimated_tokens(spec: GenerateSpec) -> int:
    """About how many tokens ``spec`` generates, without generating it."""
    if spec.tokens is not None:
        return spec.tokens
    if spec.kind == "prose":
        return round(spec.words * _TOKENS_PER_WORD)
    if spec.kind in ("chitchat", "coding_session"):
        return spec.turns * _TOKENS_PER_ITEM[spec.kind]
    tokens = spec.rows * _TOKENS_PER_ITEM[spec.kind]
    if spec.kind == "test_run":
        tokens += min(spec.failures, spec.rows) * _TOKENS_PER_FAILURE
    return tokens


def size_knob(spec: GenerateSpec) -> str:
    """The setting that sizes ``spec``, as written: "rows: 1,000,000"."""
    if spec.tokens is not None:
        return f"tokens: {spec.tokens:,}"
    if spec.kind == "prose":
        return f"words: {spec.words:,}"
    if spec.kind in ("chitchat", "coding_session"):
        return f"turns: {spec.turns:,}"
    return f"rows: {spec.rows:,}"


Message = dict[str, Any]


def generate_text(spec: GenerateSpec) -> str:
    """Bulk text for a tool output (or a user message)."""
    rng = random.Random(spec.seed)
    if spec.kind in ("chitchat", "coding_session"):
        return "\n".join(m.get("content") or "" for m in generate_turns(spec))
    if spec.kind == "prose":
        return _prose(rng, spec.words if spec.tokens is None else spec.tokens)
    items, join = _TEXT[spec.kind](rng, spec)
    return join(_take(items, spec))


def generate_turns(spec: GenerateSpec) -> list[Message]:
    """Whole turns: chit-chat pairs, or coding-agent exchanges with tool calls."""
    rng = random.Random(spec.seed)
    if spec.kind == "chitchat":
        return _chitchat(rng, spec)
    if spec.kind == "coding_session":
        return _coding_session(rng, spec)
    return [{"role": "user", "content": generate_text(spec)}]


def _exchanges(spec: GenerateSpec) -> Iterator[int]:
    """Exchange numbers: ``turns`` of them, or until ``tokens`` is reached."""
    if spec.tokens is None:
        yield from range(spec.turns)
        return
    yield from itertools.count()


class _Budget:
    """Running token count of generated messages, against ``spec.tokens``."""

    def __init__(self, spec: GenerateSpec) -> None:
        self.limit, self.used, self.counted = spec.tokens, 0, 0

    def spent(self, messages: list[Message]) -> bool:
        if self.limit is None:
            return False
        from ..llm.tokens import count_text_tokens  # lazy: litellm's tokenizer

        for message in messages[self.counted :]:
            self.used += count_text_tokens(message.get("content") or "")
        self.counted = len(messages)
        return self.used >= self.limit


def _chitchat(rng: random.Random, spec: GenerateSpec) -> list[Message]:
    messages: list[Message] = []
    budget = _Budget(spec)
    for _ in _exchanges(spec):
        if budget.spent(messages):
            break
        topic, remark = rng.choice(v.TOPICS)
        messages.append({"role": "user", "content": f"{rng.choice(v.OPENERS)} {topic}: {remark}"})
        messages.append({"role": "assistant", "content": f"{rng.choice(v.ACKS)} {remark}"})
    return messages


def _coding_session(rng: random.Random, spec: GenerateSpec) -> list[Message]:
    """A coding agent at work: the user asks, the agent reads files, runs
    tests and shell commands, and reports back."""
    messages: list[Message] = []
    tools: list[tuple[str, GeneratorKind]] = [
        ("read_file", "file_read"),
        ("run_tests", "test_run"),
        ("shell", "shell"),
        ("lint", "lint"),
    ]
    budget = _Budget(spec)
    for turn in _exchanges(spec):
        if budget.spent(messages):
            break
        stem = rng.choice(v.FILE_STEMS)
        messages.append({"role": "user", "content": rng.choice(v.CODING_ASKS).format(stem=stem)})
        name, kind = rng.choice(tools)
        call_id = f"gen_{spec.seed}_{turn}"
        args = json.dumps({"path": f"src/{stem}.py"} if name == "read_file" else {}, sort_keys=True)
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                ],
            }
        )
        sub = GenerateSpec(
            kind=kind,
            seed=rng.getrandbits(31),
            rows=rng.randint(15, 40),
            failures=rng.randint(0, 1),
        )
        messages.append(
            {"role": "tool", "tool_call_id": call_id, "name": name, "content": generate_text(sub)}
        )
        messages.append(
            {"role": "assistant", "content": rng.choice(v.CODING_REPLIES).format(stem=stem)}
        )
    return messages


def _prose(rng: random.Random, words: int) -> str:
    out, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(v.WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)
