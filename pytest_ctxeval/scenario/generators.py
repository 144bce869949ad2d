"""Seeded generators for bulk content: same spec, byte-identical output.

Vocabulary is deliberately bland (no words like "input", "key", "port") so
generated filler does not accidentally answer a probe.
"""

from __future__ import annotations

import json
import random

from .schema import GenerateSpec

_TOPICS = [
    ("weather", "The forecast says light rain in the afternoon, so an umbrella would help."),
    ("lunch", "A lentil soup with crusty bread sounds like a good lunch today."),
    ("music", "That album has a calm second half that works well for focus."),
    ("garden", "Tomatoes like full sun and a deep watering twice a week."),
    ("travel", "The train along the coast is slower but the view is lovely."),
    ("books", "The novel starts slowly and gets much better after chapter four."),
    ("coffee", "A medium roast brewed a little cooler tastes less bitter."),
    ("running", "Short easy runs most days beat one long run on the weekend."),
    ("cooking", "Salting the pasta water well makes a noticeable difference."),
    ("movies", "The sequel kept the humour but lost some of the original charm."),
    ("hiking", "The ridge trail is steep at first and then flattens out nicely."),
    ("pets", "Cats often like several small meals spread over the day."),
]
_OPENERS = ["Quick aside about", "Unrelated, but about", "Random thought on", "Side note on"]
_ACKS = ["Good point.", "Sounds right.", "Fair enough.", "Nice."]

_SPAN_NAMES = ["db.select", "http.get", "cache.lookup", "render.page", "queue.publish"]
_SERVICES = ["checkout", "catalog", "billing", "search", "accounts"]
_LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN"]
_LOG_EVENTS = [
    "worker heartbeat",
    "cache refreshed",
    "request served",
    "batch flushed",
    "connection pooled",
]
_WORDS = (
    "the a of river stone light morning paper window garden quiet long small "
    "green old road field cloud table letter music evening city north simple "
    "warm slow bright open"
).split()


def generate_text(spec: GenerateSpec) -> str:
    """Bulk text for a tool output."""
    rng = random.Random(spec.seed)
    if spec.kind == "json_rows":
        return _json_rows(rng, spec.rows)
    if spec.kind == "log_lines":
        return _log_lines(rng, spec.rows)
    if spec.kind == "prose":
        return _prose(rng, spec.words)
    return "\n".join(m["content"] for m in generate_turns(spec))


def generate_turns(spec: GenerateSpec) -> list[dict[str, str]]:
    """Whole user/assistant turns (chit-chat filler)."""
    rng = random.Random(spec.seed)
    if spec.kind != "chitchat":
        return [{"role": "user", "content": generate_text(spec)}]
    messages = []
    for _ in range(spec.turns):
        topic, remark = rng.choice(_TOPICS)
        messages.append({"role": "user", "content": f"{rng.choice(_OPENERS)} {topic}: {remark}"})
        messages.append({"role": "assistant", "content": f"{rng.choice(_ACKS)} {remark}"})
    return messages


def _json_rows(rng: random.Random, rows: int) -> str:
    lines = []
    for i in range(rows):
        row = {
            "span": f"{rng.getrandbits(32):08x}",
            "name": rng.choice(_SPAN_NAMES),
            "service": rng.choice(_SERVICES),
            "duration_ms": rng.randint(1, 900),
            "status": "ok" if rng.random() > 0.05 else "error",
            "seq": i,
        }
        lines.append(json.dumps(row, sort_keys=True))
    return "[\n" + ",\n".join(lines) + "\n]"


def _log_lines(rng: random.Random, rows: int) -> str:
    lines = []
    for i in range(rows):
        level = rng.choice(_LEVELS)
        lines.append(
            f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z {level} "
            f"{rng.choice(_SERVICES)} {rng.choice(_LOG_EVENTS)} seq={i}"
        )
    return "\n".join(lines)


def _prose(rng: random.Random, words: int) -> str:
    out, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)
