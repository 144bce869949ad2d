"""Shapes of work beside the project's own: the same needle-in-a-haystack task on
conversations built the way other people's sessions are.

- ``project``: short filler turns, the needle in an early user turn (peers/workload.py).
- ``long-assistant``: assistant turns of about 300 words, the needle in one of them.
- ``tool-json``: every fifth pair carries a JSON tool output of a few thousand
  tokens; the needle is a field of one of them.
- ``tool-logs``: the same with log files; the needle is a log line.
- ``short-turns``: four times as many pairs of a few words each; the needle in
  an assistant turn.

Every shape keeps the contract of peers/workload.py: ``pairs`` user/assistant
pairs (tool outputs come in between), one needle that states the answer, and a
final question whose subject only the needle's sentence holds.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from .workload import _PROJECTS, Conversation, conversation

SHAPES = ("project", "long-assistant", "tool-json", "tool-logs", "short-turns")
NEEDLE_PAIR = 2  # as in peers/workload.py: early on, so the whole session stands between
TOOL_EVERY = 5  # a tool output after every fifth pair's user turn
SHORT_TURN_FACTOR = 4  # short-turns: this many times the pairs, each a few words

_WORDS = (
    "deploy cluster queue index cache shard replica latency budget rollout canary "
    "backlog ticket review branch merge build pipeline artifact registry schema "
    "migration column table partition retry timeout backoff quota limit alert "
    "dashboard metric trace span sampler exporter owner rotation runbook incident"
).split()
_SERVICES = ("api", "worker", "scheduler", "gateway", "indexer", "billing", "auth")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN")
_SHORT = ("ok", "sure", "done", "noted", "yes", "go on", "thanks", "got it", "right")


def _prose(rng: random.Random, words: int) -> str:
    """Sentences of 8-14 lower-case filler words: no word of a needle or question."""
    sentences, count = [], 0
    while count < words:
        length = rng.randint(8, 14)
        sentence = " ".join(rng.choice(_WORDS) for _ in range(length))
        sentences.append(sentence.capitalize() + ".")
        count += length
    return " ".join(sentences)


def _json_output(rng: random.Random, rows: int, needle: str | None) -> str:
    records = [
        {
            "id": rng.randrange(10**6),
            "service": rng.choice(_SERVICES),
            "status": rng.choice(("ok", "degraded", "ok", "failed")),
            "latency_ms": rng.randrange(2, 900),
            "note": _prose(rng, 10),
        }
        for _ in range(rows)
    ]
    if needle is not None:
        records[len(records) // 2]["note"] = needle
    return json.dumps({"results": records}, indent=1)


def _log_output(rng: random.Random, lines: int, needle: str | None) -> str:
    out = [
        f"2026-11-30T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z "
        f"{rng.choice(_LEVELS)} {rng.choice(_SERVICES)}[{rng.randrange(100, 999)}]: "
        f"{_prose(rng, 9)}"
        for _ in range(lines)
    ]
    if needle is not None:
        out[len(out) // 2] = f"2026-11-30T12:00:00Z INFO vault[100]: {needle}"
    return "\n".join(out)


def _needle(index: int, rng: random.Random) -> tuple[str, str, str]:
    project = f"{rng.choice(_PROJECTS)}{index}"
    answer = f"{rng.randrange(1000, 10000)}-{rng.randrange(1000, 10000)}"
    sentence = f"The vault code for project {project} is {answer}."
    return sentence, f"What is the vault code for project {project}?", answer


def _long_assistant(index: int, pairs: int, seed: int) -> Conversation:
    rng = random.Random(f"{seed}:long-assistant:{pairs}:{index}")
    needle, question, answer = _needle(index, rng)
    messages = []
    for pair in range(pairs):
        messages.append({"role": "user", "content": _prose(rng, 25)})
        reply = _prose(rng, 300)
        if pair == NEEDLE_PAIR:
            reply = f"{_prose(rng, 150)} {needle} {_prose(rng, 150)}"
        messages.append({"role": "assistant", "content": reply})
    return Conversation(f"conv-{index:04d}", messages, question, answer)


def _tools(kind: str) -> Callable[[int, int, int], Conversation]:
    def make(index: int, pairs: int, seed: int) -> Conversation:
        rng = random.Random(f"{seed}:tool-{kind}:{pairs}:{index}")
        needle, question, answer = _needle(index, rng)
        messages = []
        for pair in range(pairs):
            messages.append({"role": "user", "content": _prose(rng, 20)})
            if pair % TOOL_EVERY == NEEDLE_PAIR:
                said = needle if pair == NEEDLE_PAIR else None
                # 60 records or 120 lines: about 3,000 tokens each
                output = (
                    _json_output(rng, 60, said) if kind == "json" else _log_output(rng, 120, said)
                )
                messages.append({"role": "tool", "name": f"read_{kind}", "content": output})
            messages.append({"role": "assistant", "content": _prose(rng, 40)})
        return Conversation(f"conv-{index:04d}", messages, question, answer)

    return make


def _short_turns(index: int, pairs: int, seed: int) -> Conversation:
    rng = random.Random(f"{seed}:short-turns:{pairs}:{index}")
    needle, question, answer = _needle(index, rng)
    messages = []
    for pair in range(pairs * SHORT_TURN_FACTOR):
        messages.append({"role": "user", "content": rng.choice(_SHORT)})
        reply = needle if pair == NEEDLE_PAIR else f"{rng.choice(_SHORT).capitalize()}."
        messages.append({"role": "assistant", "content": reply})
    return Conversation(f"conv-{index:04d}", messages, question, answer)


_MAKERS: dict[str, Callable[[int, int, int], Conversation]] = {
    "project": conversation,
    "long-assistant": _long_assistant,
    "tool-json": _tools("json"),
    "tool-logs": _tools("logs"),
    "short-turns": _short_turns,
}


def shaped_workload(shape: str, count: int, pairs: int, seed: int = 7) -> list[Conversation]:
    if shape not in _MAKERS:
        raise ValueError(f"unknown shape {shape!r}; expected one of {', '.join(SHAPES)}")
    make = _MAKERS[shape]
    return [make(i, pairs, seed) for i in range(count)]
