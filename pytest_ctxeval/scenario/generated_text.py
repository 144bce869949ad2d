"""The text generators: seeded items (rows, lines, spans, tests) of each
kind of tool output, and how they are joined."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator

from . import vocabulary as v
from .generate_spec import GenerateSpec


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
