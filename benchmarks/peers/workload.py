"""One seeded needle-in-a-haystack workload, written out for every tool compared.

Each conversation is P user/assistant pairs of filler talk; one early user
turn states a needle ("The vault code for project Osprey is 4821-7305.") and a
final user question asks for it. The expected answer is the needle's value.
The same messages go to pytest-ctxeval (one scenario YAML per conversation),
Inspect AI (samples with a list of chat messages) and promptfoo (tests whose
prompt is the messages as JSON), so the tools do the same work.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

PROMPTFOO_TESTS = "tests.json"  # beside the config, which names it
NEEDLE_PAIR = 2  # the needle is said in the user turn of this (0-based) pair: early on
# Filler vocabulary: none of these words is in the needle or the question, so
# a lexical mock model finds exactly one sentence that answers.
_SUBJECTS = (
    "the build pipeline",
    "the staging cluster",
    "our release notes",
    "the onboarding guide",
    "the nightly backup",
    "the search index",
    "the billing dashboard",
    "the mobile client",
    "the metrics exporter",
    "the weekly report",
)
_VERBS = ("looks slower", "needs a review", "was refactored", "passed again", "got new owners")
_DETAILS = (
    "after the last deploy",
    "according to the team",
    "since Monday",
    "in the shared channel",
    "before the holiday",
    "once the migration landed",
)
_REPLIES = (
    "Thanks, noted.",
    "Understood, I will keep that in mind.",
    "That makes sense.",
    "Good to know, let us continue.",
    "Okay, I have recorded that detail.",
)
_PROJECTS = ("Osprey", "Falcon", "Heron", "Kestrel", "Condor", "Puffin", "Plover", "Swift")


@dataclass(frozen=True)
class Conversation:
    """One sample: the messages before the question, the question, its answer."""

    id: str
    messages: list[dict[str, str]]
    question: str
    answer: str

    def chat(self) -> list[dict[str, str]]:
        """Everything a model is sent: the session, then the question."""
        return [*self.messages, {"role": "user", "content": self.question}]


def _filler(rng: random.Random, sentences: int) -> str:
    return " ".join(
        f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} {rng.choice(_DETAILS)}."
        for _ in range(sentences)
    )


def conversation(index: int, pairs: int, seed: int) -> Conversation:
    """Conversation ``index`` of a workload: the same for the same arguments."""
    if pairs <= NEEDLE_PAIR:
        raise ValueError(f"pairs must be more than {NEEDLE_PAIR} to plant the needle early")
    rng = random.Random(f"{seed}:{pairs}:{index}")
    project = f"{rng.choice(_PROJECTS)}{index}"
    answer = f"{rng.randrange(1000, 10000)}-{rng.randrange(1000, 10000)}"
    messages: list[dict[str, str]] = []
    for pair in range(pairs):
        user = _filler(rng, 3)
        if pair == NEEDLE_PAIR:
            user = f"{user} The vault code for project {project} is {answer}."
        messages.append({"role": "user", "content": user})
        messages.append(
            {"role": "assistant", "content": f"{rng.choice(_REPLIES)} {_filler(rng, 1)}"}
        )
    return Conversation(
        id=f"conv-{index:04d}",
        messages=messages,
        question=f"What is the vault code for project {project}?",
        answer=answer,
    )


def workload(count: int, pairs: int, seed: int = 7) -> list[Conversation]:
    return [conversation(i, pairs, seed) for i in range(count)]


def _turn(message: dict[str, str]) -> dict[str, object]:
    """One scenario turn: a tool output is a bare ``tool:`` turn (the harness
    writes the assistant call it answers), the others say their role."""
    if message["role"] == "tool":
        return {"tool": {"name": message["name"], "output": message["content"]}}
    return {message["role"]: message["content"]}


def ctxeval_yaml(conv: Conversation) -> str:
    """A conversation as a scenario file: the turns, and a probe that expects the answer."""
    scenario = {
        "id": conv.id,
        "description": "benchmark: recall a needle said early in a long session",
        "turns": [_turn(m) for m in conv.messages],
        "probes": [{"id": "needle", "user": conv.question, "expect": {"contains": conv.answer}}],
    }
    return yaml.safe_dump(scenario, sort_keys=False, width=1000)


def write_ctxeval(conversations: list[Conversation], folder: Path) -> list[Path]:
    """One scenario file per conversation (see ``ctxeval_yaml``)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for conv in conversations:
        path = folder / f"{conv.id}.yaml"
        path.write_text(ctxeval_yaml(conv), encoding="utf-8")
        paths.append(path)
    return paths


def write_inspect(conversations: list[Conversation], path: Path) -> Path:
    """The samples as JSON lines: ``input`` is the chat, ``target`` the answer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for conv in conversations:
            sample = {"id": conv.id, "input": conv.chat(), "target": conv.answer}
            out.write(json.dumps(sample) + "\n")
    return path


def write_promptfoo(conversations: list[Conversation], folder: Path, provider: str) -> Path:
    """A promptfoo config: each conversation is a test; the prompt is its messages as JSON.

    The tests go in a file of their own, ``tests.json``, named by the config
    (``tests: file://tests.json``), as promptfoo's docs set up a dataset: written
    inline, every string of the config becomes a template promptfoo builds, a
    slow path its normal use never takes."""
    folder.mkdir(parents=True, exist_ok=True)
    tests = [
        {
            "description": conv.id,
            "vars": {"messages": conv.chat()},
            "assert": [{"type": "icontains", "value": conv.answer}],
        }
        for conv in conversations
    ]
    (folder / PROMPTFOO_TESTS).write_text(json.dumps(tests), encoding="utf-8")
    config = {
        "description": "ctxeval benchmark workload",
        "prompts": ["{{ messages | dump }}"],
        "providers": [provider],
        "tests": f"file://{PROMPTFOO_TESTS}",
    }
    path = folder / "promptfooconfig.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path
