"""The fact ledger over a long session: each request's window is mostly the
one before, so the ledger reads each new message and stored text once and
says, request by request, what a fresh look at the whole window says."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_ctxeval.evaluate import ledger as ledger_module
from pytest_ctxeval.evaluate.ledger import FactLedger, fact_states
from pytest_ctxeval.evaluate.prefix_unions import Unchanged
from pytest_ctxeval.messages import identical_after_first, identical_prefix_length
from pytest_ctxeval.scenario.build import Fact
from pytest_ctxeval.strategies.base import Window

PORT = Fact(
    "db-port",
    "needle",
    "The staging database listens on port 5432.",
    ("5432",),
    slot="database listens on port",
    value="5432",
)
CODE = Fact("vault", "needle", "The vault code is 7-3-9.", ("7-3-9",))
TEXTS = [
    PORT.text,
    CODE.text,
    "Summary: db on 5432.",
    "Summary: the staging database listens on port 8080.",
    "The build passed.",
    "Nothing to report.",
    "Use 7-3-9 for the vault.",
]


def session_yaml(turns: int) -> str:
    """A bulky log early on holds the needle (headtail cuts it, toolprune
    prunes it: the fact leaves the window), then ``turns`` short turns."""
    lines = [
        "id: long",
        "system: You are a coding agent.",
        "turns:",
        "  - user: Fetch the billing logs.",
        "  - assistant: Fetching them.",
        "    tool_calls: [{name: fetch_logs, args: {service: billing}}]",
        "  - tool: {name: fetch_logs, generate: {kind: log_lines, rows: 300, seed: 3}}",
    ]
    for turn in range(turns):
        lines.append(f"  - user: 'Turn {turn}: the build failed again, can you look?'")
        lines.append(f"  - assistant: 'On turn {turn}: I reran the tests and they passed.'")
    lines += [
        "needles:",
        "  - id: db-port",
        "    depth: 0.5",
        "    role: tool",
        "    text: 'The staging database listens on port 5432.'",
        "    question: Which port does the staging database listen on?",
        "    answer: '5432'",
        "    slot: database listens on port",
        "probes:",
        "  - id: port",
        "    user: Which port does the staging database listen on?",
        "    expect: {contains: '5432'}",
    ]
    return "\n".join(lines) + "\n"


def texts_read(monkeypatch: pytest.MonkeyPatch, strategy: str, turns: int) -> int:
    """How many messages the fact ledger looks at, and characters of text it
    reads, while one probe of a ``turns``-turn session is evaluated under
    ``strategy`` (its ground truth too)."""
    from pytest_ctxeval.evaluate.runner import EvalSettings, Evaluator
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    read = 0
    normalise, message_found = ledger_module.normalise, FactLedger._message_found

    def counting_characters(text: str) -> str:
        nonlocal read
        read += len(text)
        return normalise(text)

    def counting_messages(self: FactLedger, message: Any) -> Any:
        nonlocal read
        read += 1  # a message already read is not read again, but still looked at
        return message_found(self, message)

    monkeypatch.setattr(ledger_module, "normalise", counting_characters)
    monkeypatch.setattr(FactLedger, "_message_found", counting_messages)
    ledger_module._found.cache_clear()
    conversation = parse_conversations(session_yaml(turns), "long.yaml")[0]
    [spec] = resolve(strategy, preset_dirs=[])
    record = Evaluator(EvalSettings(concurrency=1)).evaluate(
        conversation, spec, conversation.probes[0], source="long.yaml"
    )
    assert record.error is None and record.fact_ledger
    return read


@pytest.mark.parametrize(
    "strategy", ["full", "headtail(head=20,tail=20)", "rag", "cache-hostile", "toolprune"]
)
def test_four_times_the_turns_read_about_four_times_the_texts(
    monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    # Reading every window whole would read about sixteen times as many
    # (every request's window, or its store, holds the session so far).
    short = texts_read(monkeypatch, strategy, 100)
    long = texts_read(monkeypatch, strategy, 400)
    assert long <= 5 * short, (short, long)


def next_window(rng: random.Random, previous: Window) -> Window:
    """A window as a strategy builds them: the previous one's messages up to
    some point (or after a rewritten first message), then new ones; a store
    that grows, or now and then one made anew."""
    messages = list(previous.messages)
    change = rng.random()
    if change < 0.2 and messages:
        messages[0] = {"role": "system", "content": rng.choice(TEXTS)}
    elif change < 0.5:
        del messages[rng.randint(0, len(messages)) :]
    for _ in range(rng.randint(0, 3)):
        messages.append({"role": rng.choice(["user", "assistant"]), "content": rng.choice(TEXTS)})
    stored = list(previous.retrievable)
    if rng.random() < 0.1:
        stored = [rng.choice(TEXTS)]
    elif rng.random() < 0.5:
        stored.append(rng.choice(TEXTS))
    return Window(messages=messages, retrievable=stored)


@pytest.mark.parametrize("seed", range(30))
def test_the_ledger_says_at_each_request_what_a_fresh_look_at_the_window_says(
    seed: int,
) -> None:
    rng = random.Random(seed)
    facts = [PORT, CODE]
    told, compared = FactLedger(facts), FactLedger(facts)
    window = Window(messages=[])
    for _ in range(60):
        previous, window = window, next_window(rng, window)
        prefix = identical_prefix_length(previous.messages, window.messages)
        after_first = 0 if prefix else identical_after_first(previous.messages, window.messages)
        stored = identical_prefix_length(previous.retrievable, window.retrievable)
        expected = fact_states(facts, window)
        assert told.observe(window, unchanged=Unchanged(prefix, after_first, stored)) == expected
        assert compared.observe(window) == expected  # the ledger compares the windows itself


def test_facts_added_to_a_ledger_are_looked_for_in_the_messages_it_read() -> None:
    ledger = FactLedger([PORT])
    window = Window(messages=[{"role": "user", "content": f"{PORT.text} {CODE.text}"}])
    assert ledger.observe(window) == {"db-port": "verbatim"}
    ledger.facts.append(CODE)
    assert ledger.observe(window) == {"db-port": "verbatim", "vault": "verbatim"}
