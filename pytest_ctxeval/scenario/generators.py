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
from collections.abc import Callable, Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import vocabulary as v

GeneratorKind = Literal[
    "chitchat",
    "coding_session",
    "json_rows",
    "json_api",
    "spans",
    "log_lines",
    "file_read",
    "test_run",
    "shell",
    "lint",
    "prose",
]


class GenerateSpec(BaseModel):
    """A seeded generator; same seed, same output."""

    model_config = ConfigDict(extra="forbid")

    kind: GeneratorKind
    seed: int = 0
    # No upper bounds here: the loader bounds the estimated total of a file
    # (CTXEVAL_MAX_GENERATED_TOKENS), so one limit governs all the sizes.
    turns: int = Field(default=4, ge=1, description="chitchat / coding_session: exchanges")
    rows: int = Field(default=50, ge=1, description="items: rows, lines, spans, tests")
    tokens: int | None = Field(
        default=None, ge=1, description="approximate size in tokens (overrides rows)"
    )
    failures: int = Field(default=1, ge=0, description="test_run: failing tests")
    words: int = Field(default=200, ge=1, description="prose: words")


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


def _take(items: Iterator[str], spec: GenerateSpec) -> list[str]:
    if spec.tokens is None:
        return list(itertools.islice(items, spec.rows))
    from ..llm.tokens import count_text_tokens  # lazy: litellm's tokenizer

    # Counted with the real tokenizer, item by item (each counted once):
    # JSON and shell output run far from four characters a token.
    out: list[str] = []
    tokens = 0
    for item in items:
        if out and tokens + count_text_tokens(item) > spec.tokens:
            break
        out.append(item)
        tokens += count_text_tokens(item) + 1  # the joining newline or comma
    return out


def _lines(items: list[str]) -> str:
    return "\n".join(items)


def _json_array(items: list[str]) -> str:
    return "[\n" + ",\n".join(items) + "\n]"


def _json_rows(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def rows() -> Iterator[str]:
        for i in itertools.count():
            yield json.dumps(
                {
                    "span": f"{rng.getrandbits(32):08x}",
                    "name": rng.choice(v.SPAN_NAMES),
                    "service": rng.choice(v.SERVICES),
                    "duration_ms": rng.randint(1, 900),
                    "status": "ok" if rng.random() > 0.05 else "error",
                    "seq": i,
                },
                sort_keys=True,
            )

    return rows(), _json_array


def _json_api(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def records() -> Iterator[str]:
        for i in itertools.count(1):
            record = {
                "type": "order",
                "id": str(1000 + i),
                "attributes": {
                    "state": rng.choice(["placed", "packed", "shipped", "delivered"]),
                    "total_cents": rng.randint(500, 90_000),
                    "currency": "EUR",
                    "lines": [
                        {"sku": f"SKU-{rng.randint(100, 999)}", "qty": rng.randint(1, 4)}
                        for _ in range(rng.randint(1, 3))
                    ],
                },
                "relationships": {"customer": {"id": f"c{rng.randint(1, 500)}"}},
            }
            yield "    " + json.dumps(record, sort_keys=True)

    def wrap(items: list[str]) -> str:
        meta = json.dumps({"count": len(items), "page": 1}, sort_keys=True)
        return '{\n  "data": [\n' + ",\n".join(items) + f'\n  ],\n  "meta": {meta}\n}}'

    return records(), wrap


def _spans(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def spans() -> Iterator[str]:
        trace = f"{rng.getrandbits(64):016x}"
        parents: list[str] = []
        clock = 0
        for i in itertools.count():
            if i % 12 == 0:
                trace, parents = f"{rng.getrandbits(64):016x}", []
            span_id = f"{rng.getrandbits(32):08x}"
            clock += rng.randint(1, 40)
            yield json.dumps(
                {
                    "trace_id": trace,
                    "span_id": span_id,
                    "parent_id": rng.choice(parents) if parents else None,
                    "name": rng.choice(v.SPAN_NAMES),
                    "service": rng.choice(v.SERVICES),
                    "start_ms": clock,
                    "duration_ms": rng.randint(1, 400),
                    "attributes": {
                        "region": rng.choice(["eu-west", "us-east"]),
                        "retry": rng.randint(0, 2),
                    },
                },
                sort_keys=True,
            )
            parents.append(span_id)

    return spans(), _json_array


def _log_lines(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def lines() -> Iterator[str]:
        for i in itertools.count():
            level = rng.choice(v.LOG_LEVELS)
            yield (
                f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z {level} "
                f"{rng.choice(v.SERVICES)} {rng.choice(v.LOG_EVENTS)} seq={i}"
            )

    return lines(), _lines


def _file_read(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def lines() -> Iterator[str]:
        source = v.python_source(rng)
        for number in itertools.count(1):
            yield f"{number:>5}\t{next(source)}"

    return lines(), _lines


def _test_run(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def results() -> Iterator[str]:
        for i in itertools.count():
            module = rng.choice(v.TEST_MODULES)
            yield f"tests/{module}.py::test_{rng.choice(v.TEST_NAMES)}_{i} PASSED"

    def report(items: list[str]) -> str:
        failed = set(rng.sample(range(len(items)), min(spec.failures, len(items))))
        lines = [f"collected {len(items)} items", ""]
        tracebacks = []
        for i, line in enumerate(items):
            if i in failed:
                line = line.replace("PASSED", "FAILED")
                name = line.split("::")[1].split()[0]
                tracebacks.append(v.traceback(rng, line.split("::")[0], name))
            lines.append(line)
        summary = f"{len(items) - len(failed)} passed" + (
            f", {len(failed)} failed" if failed else ""
        )
        return "\n".join(
            lines + ["", *tracebacks, f"===== {summary} in {rng.uniform(0.5, 30):.2f}s ====="]
        )

    return results(), report


def _shell(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def entries() -> Iterator[str]:
        for _ in itertools.count():
            name = rng.choice(v.FILE_STEMS) + rng.choice([".py", ".md", ".toml", ".txt", ""])
            yield (
                f"-rw-r--r-- 1 dev dev {rng.randint(80, 90_000):>6} "
                f"Jan {rng.randint(1, 28):>2} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {name}"
            )

    return entries(), lambda items: "$ ls -la\n" + "\n".join(items)


def _lint(
    rng: random.Random, spec: GenerateSpec
) -> tuple[Iterator[str], Callable[[list[str]], str]]:
    def findings() -> Iterator[str]:
        for _ in itertools.count():
            code, message = rng.choice(v.LINT_RULES)
            path = f"src/{rng.choice(v.FILE_STEMS)}.py"
            yield f"{path}:{rng.randint(1, 400)}:{rng.randint(1, 80)}: {code} {message}"

    return findings(), lambda items: "\n".join(items) + f"\nFound {len(items)} errors."


_TEXT = {
    "json_rows": _json_rows,
    "json_api": _json_api,
    "spans": _spans,
    "log_lines": _log_lines,
    "file_read": _file_read,
    "test_run": _test_run,
    "shell": _shell,
    "lint": _lint,
}


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
