"""The fact ledger: every needle and constraint gets a state after every
request of a session (verbatim, transformed, mutated, in_store, gone), in
scripted and rollout runs; a recorded compaction that rewrites a value is
``mutated``, and ``--ctx-fail-if=mutated:>0`` fails the run on it.  Over a
long session it reads each new message and stored text once."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, assert_no_traceback, output
from fake_openai_server import closed_port_url

from pytest_ctxeval.evaluate import ledger as ledger_module
from pytest_ctxeval.evaluate.ledger import FactLedger, fact_states
from pytest_ctxeval.evaluate.prefix_unions import Unchanged
from pytest_ctxeval.messages import identical_after_first, identical_prefix_length
from pytest_ctxeval.scenario.build import Fact
from pytest_ctxeval.strategies.base import Window

pytestmark = pytest.mark.usefixtures("_preloaded_modules")

REPO = Path(__file__).resolve().parents[1]
DRIFT = REPO / "scenarios" / "summary-drift-port.yaml"
UPDATE = REPO / "scenarios" / "summary-drift-update.yaml"
# Recorded from SmolLM2-135M-Instruct (llama.cpp, .ci/llm-server.sh) by
# .ci/record-summary-drift.sh: its summary wrote the migrated database's new
# port with the old number. Replayed with no server at all.
UPDATE_CASSETTES = REPO / "tests" / "fixtures" / "cassettes" / "summary-drift-update"
UPDATE_STRATEGY = "--ctx-strategy=summarize(trigger_tokens=80,keep_messages=1)"
UPDATE_NAME = "summarize[trigger_tokens:80+keep_messages:1]"

PORT = Fact(
    "db-port",
    "needle",
    "The staging database listens on port 5432.",
    ("5432",),
    slot="database listens on port",
    value="5432",
)


def said(*texts: str) -> Window:
    return Window([{"role": "user", "content": t} for t in texts])


@pytest.mark.parametrize(
    "texts, state",
    [
        (["Notes: The staging database listens on port 5432."], "verbatim"),
        (["Summary: db on 5432."], "transformed"),
        (["Summary: the staging database listens on port 8080."], "mutated"),
        (["The web server is on port 8080."], "gone"),
        ([], "gone"),
    ],
)
def test_each_request_gets_a_state_and_another_value_in_the_slot_is_a_mutation(
    texts: list[str], state: str
) -> None:
    assert fact_states([PORT], said(*texts)) == {"db-port": state}


def test_a_fact_only_in_the_memory_store_is_in_store() -> None:
    window = Window([{"role": "user", "content": "hi"}], retrievable=[PORT.text])
    assert fact_states([PORT], window) == {"db-port": "in_store"}


def test_the_ledger_keeps_runs_of_states_and_the_compactions() -> None:
    ledger = FactLedger([PORT])
    ledger.observe(said(PORT.text))
    ledger.observe(said(PORT.text))
    ledger.observe(said("the staging database listens on port 8080"), compacted=True)
    assert ledger.runs == {"db-port": [["verbatim", 2], ["mutated", 1]]}
    assert ledger.compactions == [3]


def test_probes_share_one_copy_of_the_ledger_and_later_requests_leave_it_alone() -> None:
    ledger = FactLedger([PORT])
    ledger.observe(said(PORT.text))
    runs, compactions = ledger.as_of_now()
    assert ledger.as_of_now()[0] is runs  # no request since: the same copy
    ledger.observe(said("nothing here"), compacted=True)
    assert runs == {"db-port": [["verbatim", 1]]} and compactions == []
    assert ledger.as_of_now() == ({"db-port": [["verbatim", 1], ["gone", 1]]}, [2])


def _update_project(ctx: CtxProject) -> None:
    ctx.write("scenarios/summary-drift-update.yaml", UPDATE.read_text(encoding="utf-8"))
    shutil.copytree(UPDATE_CASSETTES, ctx.path / "cassettes")


def _replay(ctx: CtxProject, *more: str) -> pytest.RunResult:
    # A closed port: any request not in the cassettes would fail the run.
    return ctx.run(
        UPDATE_STRATEGY,
        "--ctx-model=openai/smollm2",
        f"--ctx-api-base={closed_port_url()}",
        "--ctx-cassettes=cassettes",
        "--ctx-record=none",
        *more,
    )


def _stable(records: list[dict[str, Any]]) -> str:
    drop = {"run_id", "started_at", "latency_s"}
    return json.dumps([{k: v for k, v in r.items() if k not in drop} for r in records])


def test_a_real_models_summary_that_rewrites_the_port_is_mutated_at_its_compaction(
    ctx: CtxProject,
) -> None:
    _update_project(ctx)
    first = _replay(ctx, "--ctx-results=first.jsonl")
    assert_no_traceback(first)
    (record,) = ctx.results("first.jsonl")
    assert record["error"] is None
    assert record["llm_calls"] == 2  # the probe, under the strategy and with the full context
    assert record["compaction_requests"] == [4]
    # Planted at the third message: gone before it, kept raw, then the
    # model's summary says "the staging database listens on port 3306 now".
    assert record["fact_ledger"]["db-port"] == [["gone", 1], ["verbatim", 2], ["mutated", 1]]
    again = _replay(ctx, "--ctx-results=second.jsonl")
    assert again.ret == first.ret
    assert _stable(ctx.results("second.jsonl")) == _stable(ctx.results("first.jsonl"))


def test_fail_if_mutated_fails_the_run_and_names_the_fact(ctx: CtxProject) -> None:
    _update_project(ctx)
    result = _replay(ctx, "--ctx-fail-if=mutated:>0", "--ctx-fail-on=never")
    assert_no_traceback(result)
    assert result.ret == 6
    assert (
        f"FACT LEDGER  {UPDATE_NAME}: 1 fact(s) mutated (summary-drift-update::db-port at "
        "request 4) [--ctx-fail-if mutated:>0]"
    ) in output(result)
    # A limit the run stays within passes.
    assert _replay(ctx, "--ctx-fail-if=mutated:>1", "--ctx-fail-on=never").ret == 0


def test_on_the_mock_the_summariser_keeps_or_drops_but_never_rewrites(ctx: CtxProject) -> None:
    ctx.write("scenarios/summary-drift-port.yaml", DRIFT.read_text(encoding="utf-8"))
    result = ctx.run(
        "--ctx-strategy=summarize(trigger_tokens=300,keep_messages=6),sliding",
        "--ctx-fail-if=mutated:>0",
        "--ctx-fail-on=never",
    )
    assert result.ret == 0, output(result)
    states = {
        r["strategy"]: {state for state, _ in r["fact_ledger"]["db-port"]} for r in ctx.results()
    }
    assert "mutated" not in set().union(*states.values())
    assert states["sliding"] == {"gone", "verbatim"}


def test_on_the_mock_the_recorded_scenario_has_no_mutation(ctx: CtxProject) -> None:
    # The mutation in the cassette is the real model's: the mock's summary keeps the update.
    ctx.write("scenarios/summary-drift-update.yaml", UPDATE.read_text(encoding="utf-8"))
    result = ctx.run(UPDATE_STRATEGY, "--ctx-fail-if=mutated:>0", "--ctx-fail-on=never")
    assert result.ret == 0, output(result)
    (record,) = ctx.results()
    assert record["fact_ledger"]["db-port"] == [["gone", 1], ["verbatim", 3]]


def test_a_bad_ledger_rule_is_a_usage_error_quoting_it(ctx: CtxProject) -> None:
    ctx.write("scenarios/summary-drift-port.yaml", DRIFT.read_text(encoding="utf-8"))
    result = ctx.run("--ctx-fail-if=mutatd:>0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--ctx-fail-if: invalid rule 'mutatd:>0'; expected [STRATEGY:]STATE:>N with STATE one "
        "of mutated, gone, in_store, transformed and N a whole number, e.g. 'mutated:>0'"
    ) in output(result)


# -- over a long session: each request's window is mostly the one before, so the ledger
# reads each new message and stored text once, and says, request by request, what a
# fresh look at the whole window says.

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
    normalise, message_found = ledger_module.normalise, FactLedger._found_in

    def counting_characters(text: str) -> str:
        nonlocal read
        read += len(text)
        return normalise(text)

    def counting_messages(self: FactLedger, message: Any, key: Any) -> Any:
        nonlocal read
        read += 1  # a message already read is not read again, but still looked at
        return message_found(self, message, key)

    monkeypatch.setattr(ledger_module, "normalise", counting_characters)
    monkeypatch.setattr(FactLedger, "_found_in", counting_messages)
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
