"""The strategy library: each new strategy's window on small sessions, the
model-calling ones against the mock model, presets, third-party strategies."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.evaluate.simulate import SessionTrace, simulate
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.loader import parse_conversations
from pytest_ctxeval.strategies.base import BaseStrategy, Message, StrategyContext, messages_tokens
from pytest_ctxeval.strategies.cache_hostile import CacheHostileStrategy
from pytest_ctxeval.strategies.compaction import CachedCompactionStrategy, CompactionStrategy
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.observation_mask import ObservationMaskStrategy
from pytest_ctxeval.strategies.rag import RagStrategy
from pytest_ctxeval.strategies.subagent import SubagentStrategy
from pytest_ctxeval.strategies.summarize import SUMMARY_PREFIX, SummarizeStrategy
from pytest_ctxeval.strategies.toolprune import ToolPruneStrategy
from pytest_ctxeval.strategies.truncate import TruncateStrategy
from pytest_ctxeval.strategies.working_memory import WorkingMemory, strict_schema

ORACLE = "ctxeval/oracle"
REPO = Path(__file__).resolve().parents[1]


def words(text: str) -> int:
    """A token counter whose numbers a reader can check by eye."""
    return len(text.split())


class FakeModel:
    """Records what a strategy asks; answers with canned text or JSON."""

    def __init__(self, reply: str = "the summary", memory: dict[str, Any] | None = None) -> None:
        self.reply = reply
        self.memory = memory or {}
        self.requests: list[list[Message]] = []
        self.schemas: list[dict[str, Any]] = []

    def context(self) -> StrategyContext:
        return StrategyContext(words, self.complete, self.complete_json)

    def complete(self, messages: list[Message]) -> str:
        self.requests.append(copy.deepcopy(messages))
        return self.reply

    def complete_json(self, messages: list[Message], schema: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(copy.deepcopy(messages))
        self.schemas.append(schema)
        return {**WorkingMemory().model_dump(), **self.memory}


def fed(strategy: Any, messages: list[Message], model: FakeModel | None = None) -> Any:
    if model is not None:
        strategy.setup(model.context())
    for message in copy.deepcopy(messages):
        strategy.add(message)
    return strategy


def chat(turns: int, words_each: int = 10, system: str | None = "You are terse.") -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    for turn in range(1, turns + 1):
        messages.append(
            {"role": "user", "content": f"question {turn} " + "word " * (words_each - 2)}
        )
        messages.append(
            {"role": "assistant", "content": f"answer {turn} " + "word " * (words_each - 2)}
        )
    return messages


def tool_turn(n: int, output: str, name: str = "query", args: str = "{}") -> list[Message]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": args}}
    return [
        {"role": "user", "content": f"Run step {n}."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "name": name, "content": output},
        {"role": "assistant", "content": f"Step {n} ran."},
    ]


def params_of(strategy: Any) -> dict[str, Any]:
    assert isinstance(strategy, BaseStrategy)
    return strategy.params()


def conversation(yaml_text: str) -> Conversation:
    return parse_conversations(textwrap.dedent(yaml_text), "x.yaml")[0]


def run(conv: Conversation, strategy: Any) -> SessionTrace:
    return simulate(conv, strategy, client=ModelClient(ORACLE), model=ORACLE)


LONG_SESSION = """
    id: long
    system: You are an assistant that analyses traces.
    turns:
      - user: >-
          I want to migrate the billing service.
          Never use the requests library; always use urllib3.
      - tool: {name: query_spans, generate: {kind: json_rows, rows: 300, seed: 7}}
      - assistant: "Top inputs: A) 'reset password' (412), B) 'refund status' (377)."
      - generate: {kind: chitchat, turns: 30, seed: 3}
      - user: Write the migration script to src/migrate.py.
      - tool: {name: write_file, args: {path: src/migrate.py}, output: "wrote 120 lines"}
      - assistant: Done, src/migrate.py is written.
      - generate: {kind: chitchat, turns: 14, seed: 4}
    probes:
      - {id: http, user: "Write a function that downloads a URL."}
"""


# --- truncate: tokens ---------------------------------------------------------


def test_truncate_in_tokens_keeps_the_first_max_tokens_tokens() -> None:
    session = chat(3, words_each=10)  # 10 "tokens" a message
    strategy = fed(TruncateStrategy(unit="tokens", max_tokens=25), session, FakeModel())
    messages = strategy.window().messages
    assert messages[:3] == session[:3]  # system (not counted), then 10 + 10 tokens
    # 5 tokens left: the longest start of the message that counts 5.
    assert messages[3]["content"] == "question 2 word word word "
    assert messages[4:] == session[-1:]  # then only the current message
    assert strategy.params() == {"unit": "tokens", "max_tokens": 25}


def test_truncate_rejects_an_unknown_unit() -> None:
    with pytest.raises(ValueError, match="unit must be one of chars, tokens, items, got 'lines'"):
        TruncateStrategy(unit="lines")


# --- summarize ------------------------------------------------------------------


def test_summarize_leaves_a_window_under_the_trigger_alone() -> None:
    model = FakeModel()
    session = chat(5)
    assert fed(SummarizeStrategy(trigger_tokens=1000), session, model).window().messages == session
    assert model.requests == []


def test_summarize_puts_the_summary_after_the_system_prompt_and_keeps_20_raw() -> None:
    model = FakeModel(reply="Port 5432 is the database port.")
    session = chat(20)  # 41 messages, ~14 tokens each
    strategy = fed(SummarizeStrategy(trigger_tokens=300), session, model)
    messages = strategy.window().messages
    assert messages[0] == session[0]
    assert messages[1] == {
        "role": "user",
        "content": SUMMARY_PREFIX + "Port 5432 is the database port.",
    }
    assert messages[2:] == session[-20:]
    assert len(model.requests) == 1 and strategy.summarized == 20
    request = model.requests[0]
    assert request[0]["role"] == "system" and request[1]["content"].startswith("Summarize")
    assert "question 1 " in request[1]["content"] and "answer 10 " in request[1]["content"]
    assert "question 11 " not in request[1]["content"]  # still raw: not summarised


def test_summarize_folds_the_previous_summary_into_the_next() -> None:
    model = FakeModel(reply="- first summary with id 42")
    strategy = fed(SummarizeStrategy(trigger_tokens=300), chat(20), model)
    strategy.window()
    for message in chat(3, system=None):
        strategy.add(message)
    strategy.window()
    assert len(model.requests) == 2
    second = model.requests[1][1]["content"]
    assert "Previous summary:\nfirst summary with id 42" in second  # bullets stripped
    assert strategy.summaries_written == 2


def test_summarize_trims_the_summarizer_input_to_its_most_recent_tokens() -> None:
    model = FakeModel()
    strategy = fed(SummarizeStrategy(trigger_tokens=300, trim_tokens=100), chat(20), model)
    strategy.window()
    sent = model.requests[0][1]["content"].split("New messages:\n", 1)[1]
    assert words(sent) <= 100
    assert "answer 10 " in sent and "question 1 " not in sent  # the oldest lines are lost


def test_summarize_never_cuts_between_a_tool_call_and_its_result() -> None:
    # keep_messages=2 would start the raw tail at the tool result of step 2.
    session = [
        {"role": "system", "content": "s"},
        *tool_turn(1, "one " * 50),
        *tool_turn(2, "two " * 50),
    ]
    session = session[:-1]  # ends on step 2's tool result: raw tail = call + result
    strategy = fed(SummarizeStrategy(trigger_tokens=50, keep_messages=1), session, FakeModel())
    messages = strategy.window().messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["tool_calls"][0]["id"] == "c2" and messages[3]["tool_call_id"] == "c2"


def test_summarize_records_its_prompt_version_and_refuses_another() -> None:
    assert SummarizeStrategy().params()["prompt_version"] == "v1"
    assert (
        SummarizeStrategy(**SummarizeStrategy().params()).params() == SummarizeStrategy().params()
    )
    with pytest.raises(ValueError, match="prompt_version 'v0' is not this version's prompt"):
        SummarizeStrategy(prompt_version="v0")


def test_summarize_against_the_mock_model_counts_its_calls() -> None:
    conv = conversation(LONG_SESSION)
    strategy = SummarizeStrategy(trigger_tokens=2000, keep_messages=6)
    trace = run(conv, strategy)
    assert strategy.summaries_written > 0
    assert trace.strategy_calls == strategy.summaries_written
    assert trace.strategy_prompt_tokens > 0 and trace.strategy_completion_tokens > 0
    summary = trace.last_window[1]["content"]
    # The extractive mock keeps imperatives: the early constraint survives the summary.
    assert summary.startswith(SUMMARY_PREFIX) and "always use urllib3" in summary


# --- compaction -------------------------------------------------------------------


def compaction_session(turns: int = 7) -> list[Message]:
    session: list[Message] = [{"role": "system", "content": "You are a coding agent."}]
    session += [
        {"role": "user", "content": "I want a CLI. Always keep the database port at 5432."},
        {"role": "assistant", "content": "OK."},
    ]
    for n in range(2, turns + 1):
        session += tool_turn(
            n, f"edited file {n}", "write_file", json.dumps({"path": f"src/f{n}.py"})
        )
    return session


def test_compaction_distils_older_turns_into_the_typed_memory_every_n_turns() -> None:
    model = FakeModel(memory={"goal": "Build a CLI", "modified_files": ["README.md"]})
    strategy = fed(CompactionStrategy(every_turns=3, keep_turns=2), compaction_session(5), model)
    messages = strategy.window().messages
    assert strategy.compactions == 1 and strategy.turns_compacted == 3
    assert messages[1:] == compaction_session(5)[-8:]  # turns 4 and 5 stay raw
    system = messages[0]["content"]
    assert system.startswith("You are a coding agent.\n\n## Working memory (3 turns compacted):")
    assert "### Goal\n- Build a CLI" in system
    # Files: the model's plus those the tool calls touched, merged and sorted by code.
    assert strategy.memory.modified_files == ["README.md", "src/f2.py", "src/f3.py"]
    assert model.schemas == [strict_schema()]


def test_compaction_schema_is_strict_structured_output_with_six_fields() -> None:
    schema = strict_schema()
    assert schema["required"] == [
        "goal",
        "completed_milestones",
        "pending_tasks",
        "active_user_constraints",
        "modified_files",
        "key_discoveries",
    ]
    assert schema["additionalProperties"] is False
    assert not any("default" in prop for prop in schema["properties"].values())


def test_compaction_ledger_keeps_user_constraints_verbatim_whatever_the_model_says() -> None:
    model = FakeModel(
        memory={
            "active_user_constraints": ["Always keep the database port at 8080.", "I want a CLI."]
        }
    )
    strategy = fed(CompactionStrategy(every_turns=3, keep_turns=2), compaction_session(5), model)
    strategy.window()
    # The rule the user said is in; the mutated one is not; a proposal the user said verbatim is.
    assert strategy.ledger.entries == ("Always keep the database port at 5432.", "I want a CLI.")
    model.memory = {"active_user_constraints": [], "modified_files": []}
    for message in compaction_session(8)[len(compaction_session(5)) :]:
        strategy.add(message)
    strategy.window()
    assert strategy.compactions == 2
    assert strategy.ledger.entries[0] == "Always keep the database port at 5432."  # not dropped
    assert "src/f2.py" in strategy.memory.modified_files  # the model forgot it; code did not


def test_compaction_cached_keeps_the_system_prompt_byte_identical() -> None:
    model = FakeModel(memory={"goal": "Build a CLI", "pending_tasks": ["b", "a"]})
    session = compaction_session(5)
    messages = (
        fed(CachedCompactionStrategy(every_turns=3, keep_turns=2), session, model).window().messages
    )
    assert messages[0] == session[0]
    assert messages[1]["content"].startswith("User constraints (verbatim, append-only):\n- Always")
    memory_text = messages[2]["content"]
    body = json.loads(memory_text.split("\n", 1)[1])
    assert list(body) == sorted(body) and body["goal"] == "Build a CLI"
    assert messages[3:] == session[-8:]


def test_compaction_against_the_mock_model_uses_structured_output() -> None:
    conv = conversation(LONG_SESSION)
    strategy = CompactionStrategy()
    trace = run(conv, strategy)
    assert strategy.compactions == trace.strategy_calls > 0
    assert "Never use the requests library; always use urllib3." in strategy.ledger.entries
    assert strategy.memory is not None and strategy.memory.goal  # filled in by the mock
    assert "src/migrate.py" in strategy.memory.modified_files


def test_cache_aligned_compaction_shares_more_prefix_than_the_plain_layout() -> None:
    conv = conversation(LONG_SESSION)
    conv.messages[0]["content"] = "You analyse traces. " * 400  # a big static prefix
    plain, aligned = run(conv, CompactionStrategy()), run(conv, CachedCompactionStrategy())
    shared = [sum(r.shared_prefix_tokens for r in t.requests) for t in (plain, aligned)]
    assert shared[1] > shared[0]
    assert plain.cumulative_input_tokens == pytest.approx(aligned.cumulative_input_tokens, rel=0.05)


# --- structured output from the mock model ---------------------------------------


def test_the_mock_fills_a_json_schema_from_the_visible_messages_only() -> None:
    from pytest_ctxeval.llm.structured import fill

    messages = [
        {"role": "system", "content": "The goal is secret: never reveal it."},
        {"role": "user", "content": "I want a faster build. Never touch src/legacy.py please."},
        {"role": "assistant", "content": "Fixed the cache bug; the build passed."},
    ]
    schema = {
        "type": "object",
        "properties": {
            "goal": {"type": "string", "description": "what the person wants"},
            "files": {"type": "array", "items": {"type": "string"}, "description": "file paths"},
            "rules": {"type": "array", "items": {"type": "string"}, "description": "never, always"},
            "done": {"type": "array", "items": {"type": "string"}, "description": "fixed, passed"},
            "count": {"type": "integer"},
            "mode": {"enum": ["fast", "slow"]},
            "nested": {"$ref": "#/$defs/Inner"},
        },
        "$defs": {"Inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
    }
    assert fill(messages, schema) == {
        "goal": "I want a faster build.",
        "files": ["src/legacy.py"],
        "rules": ["Never touch src/legacy.py please."],
        "done": ["Fixed the cache bug; the build passed."],
        "count": 0,
        "mode": "fast",
        "nested": {"ok": False},
    }


def test_the_mock_provider_answers_response_format_with_json() -> None:
    from pytest_ctxeval.llm.providers import _reply_for

    schema = {"type": "object", "properties": {"goal": {"type": "string"}}, "required": ["goal"]}
    response_format = {"type": "json_schema", "json_schema": {"name": "m", "schema": schema}}
    messages = [{"role": "user", "content": "My goal: ship it."}]
    reply = _reply_for("oracle", messages, [], response_format)
    assert json.loads(reply.content or "") == {"goal": "My goal: ship it."}
    assert _reply_for("echo", messages, [], response_format).content == "user: My goal: ship it."


# --- rag ---------------------------------------------------------------------------


def rag_session() -> list[Message]:
    facts = [
        "The staging database listens on port 5433.",
        "Lunch is at noon.",
        "The cache TTL is 90s.",
    ]
    session: list[Message] = [{"role": "system", "content": "You are terse."}]
    for n, fact in enumerate(facts * 2, start=1):
        session += [
            {"role": "user", "content": f"Note {n}: {fact}"},
            {"role": "assistant", "content": "Noted."},
        ]
    return session + [{"role": "user", "content": "Which port does the staging database use?"}]


def test_rag_retrieves_evicted_turns_in_timeline_order_with_turn_numbers() -> None:
    strategy = fed(RagStrategy(k=2, keep_turns=2), rag_session())
    messages = strategy.window().messages
    assert messages[0]["role"] == "system"
    retrieved = messages[1]["content"]
    assert retrieved.startswith("Retrieved from earlier in this conversation (oldest first):")
    # Turns 1 and 4 said it; turn 1 comes first although both score alike.
    assert retrieved.index("[turn 1]\n[user] Note 1: The staging database") < retrieved.index(
        "[turn 4]\n[user] Note 4: The staging database"
    )
    assert messages[2:] == rag_session()[-3:]  # the last 2 turns, raw
    assert all("Lunch" not in m["content"] for m in messages[1:2])


def test_rag_builds_each_window_of_a_session_as_it_would_from_scratch() -> None:
    # A tool round asks the turn's question of the same store: its window
    # retrieves what the turn's first did.  The same question asked again in
    # the next turn, once another turn was evicted, searches the larger store.
    question = "Which port does the staging database use?"
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    session = rag_session() + [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "port table: see the notes"},
        {"role": "assistant", "content": "Port 5433."},
        {"role": "user", "content": "Note 7: The staging database moved to port 6543."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": question},
        {"role": "assistant", "content": "Port 6543."},
        {"role": "user", "content": question},
    ]
    turn_by_turn = RagStrategy(k=2, keep_turns=2)
    windows = 0
    for n, message in enumerate(session, start=1):
        turn_by_turn.add(dict(message))
        if message["role"] in ("user", "tool"):  # a request goes out
            from_scratch = fed(RagStrategy(k=2, keep_turns=2), session[:n]).window()
            assert turn_by_turn.window().messages == from_scratch.messages, n
            windows += 1
    assert windows == 11
    assert "Note 7: The staging database moved" in turn_by_turn.window().messages[1]["content"]


def test_rag_injects_nothing_when_nothing_matches_or_nothing_is_evicted() -> None:
    session = rag_session()[:-1] + [{"role": "user", "content": "Thanks!"}]
    assert (
        fed(RagStrategy(keep_turns=2), session).window().messages[1]["content"].startswith("Note 6")
    )
    assert fed(RagStrategy(keep_turns=50), rag_session()).window().messages == rag_session()


def test_bm25_ranks_rare_terms_first_and_breaks_ties_by_recency() -> None:
    from pytest_ctxeval.strategies.bm25 import BM25Index

    index = BM25Index()
    for text in ["deploy the api", "deploy the web", "rotate the api key", "deploy the web"]:
        index.add(text)
    assert index.search("api key", 2) == [2, 0]
    assert index.search("web", 5) == [3, 1]  # equal scores: the later one first
    assert index.search("nothing here", 3) == []


def _bm25_by_the_book(documents: list[str], query: str, k: int) -> list[int]:
    """Okapi BM25 (k1=1.5, b=0.75) one document at a time, terms in sorted
    order; the k best, ties to the later document."""
    import math
    from collections import Counter

    from pytest_ctxeval.llm.text import terms

    counts = [Counter(terms(d)) for d in documents]
    lengths = [sum(c.values()) for c in counts]
    average = sum(lengths) / len(documents) or 1.0
    scores: dict[int, float] = {}
    for term in sorted(set(terms(query))):
        having = [i for i, c in enumerate(counts) if term in c]
        idf = math.log(1 + (len(documents) - len(having) + 0.5) / (len(having) + 0.5))
        for i in having:
            tf = counts[i][term]
            norm = 1.5 * (1 - 0.75 + 0.75 * lengths[i] / average)
            scores[i] = scores.get(i, 0.0) + idf * tf * (1.5 + 1) / (tf + norm)
    ranked = sorted(((s, i) for i, s in scores.items() if s > 0), reverse=True)
    return [i for _, i in ranked[:k]]


def test_bm25_ranks_exactly_as_the_formula_one_document_at_a_time() -> None:
    # The index scores arrays at once; rankings, ties included, must be the
    # ones the formula gives document by document.
    import random

    from pytest_ctxeval.strategies.bm25 import BM25Index

    rng = random.Random(7)
    words = "vault code launch port staging database deploy api key web the a of is".split()
    for round_ in range(200):
        # Every other corpus has a word in every document, as a session's
        # "turn" or "user" is: the index scores such a word over all at once.
        everywhere = "turn " if round_ % 2 else ""
        documents = [
            everywhere + " ".join(rng.choice(words) for _ in range(rng.randint(0, 10)))
            for _ in range(rng.randint(1, 40))
        ]
        index = BM25Index()
        for document in documents:
            index.add(document)
        fork = copy.deepcopy(index)  # what a forked strategy searches
        for _ in range(4):
            query = " ".join(rng.choice([*words, "turn"]) for _ in range(rng.randint(0, 4)))
            k = rng.randint(1, 6)
            expected = _bm25_by_the_book(documents, query, k)
            assert index.search(query, k) == expected, (documents, query, k)
            assert fork.search(query, k) == expected


def test_bm25_ranks_as_the_formula_while_the_store_grows_between_searches() -> None:
    # A session's store gains documents between searches, and a fork goes on
    # from the store as it was: words in most documents (a session's small
    # vocabulary) are scored from frequencies the index keeps and extends.
    import random

    from pytest_ctxeval.strategies.bm25 import BM25Index

    rng = random.Random(5)
    common, rare = "deploy cache queue shard".split(), [f"r{i}" for i in range(30)]
    documents: list[str] = []
    index = BM25Index()
    fork: BM25Index | None = None
    fork_documents: list[str] = []

    def document() -> str:
        text = " ".join(rng.choice(common) for _ in range(rng.randint(0, 12)))
        return text + " " + " ".join(rng.choices(rare, k=rng.randint(0, 2)))

    for step in range(300):
        # After the fork, each store gains documents of its own.
        for store, texts in ((index, documents), (fork, fork_documents)):
            if store is not None:
                texts.append(document())
                store.add(texts[-1])
        if step == 150:  # after many searches
            fork, fork_documents = copy.deepcopy(index), list(documents)
        if fork is not None or rng.random() < 0.5:
            query = " ".join(rng.choices([*common, *rare], k=rng.randint(1, 4)))
            k = rng.randint(1, 5)
            assert index.search(query, k) == _bm25_by_the_book(documents, query, k), step
            if fork is not None:
                assert fork.search(query, k) == _bm25_by_the_book(fork_documents, query, k), step


def test_bm25_scores_only_the_documents_that_can_rank_and_ranks_as_the_formula() -> None:
    # A session's store grows every turn and is searched every turn: a search
    # that scored every document would make the session quadratic.
    import random

    from pytest_ctxeval.strategies.bm25 import BM25Index

    rng = random.Random(11)
    words = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(300)]  # a few common words, many rare ones
    documents = [
        "turn user " + " ".join(rng.choices(words, weights, k=rng.randint(0, 20)))
        for _ in range(2_000)
    ]
    index = BM25Index()
    for document in documents:
        index.add(document)
    scored = []
    for _ in range(40):
        query = "turn " + " ".join(rng.choices(words, k=rng.randint(1, 5)))
        k = rng.randint(1, 5)
        assert index.search(query, k) == _bm25_by_the_book(documents, query, k), query
        scored.append(index.last_scored)
    assert sorted(scored)[len(scored) // 2] < len(documents) // 10  # the median search


def test_rag_embeddings_backend_names_the_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ctxeval.strategies.retrieval import MissingExtraError

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails
    with pytest.raises(MissingExtraError, match=r"pip install 'pytest-ctxeval\[embeddings\]'"):
        RagStrategy(backend="embeddings")
    with pytest.raises(ValueError, match="backend must be one of bm25, embeddings, got 'tfidf'"):
        RagStrategy(backend="tfidf")


# --- toolprune -------------------------------------------------------------------


def test_toolprune_cuts_json_arrays_to_two_items_a_count_and_the_schema() -> None:
    from pytest_ctxeval.strategies.pruning import PruneRules, prune

    rows = [{"id": i, "name": f"n{i}", "tags": ["a", "b", "c"]} for i in range(50)]
    rows[7]["extra"] = None
    pruned = json.loads(prune(json.dumps({"rows": rows, "page": 1}), PruneRules()))
    assert pruned["page"] == 1
    assert pruned["rows"] == {
        "first_items": [
            {
                "id": 0,
                "name": "n0",
                "tags": {
                    "first_items": ["a", "b"],
                    "item_schema": "string",
                    "pruned_items": 1,
                    "total_items": 3,
                },
            },
            {
                "id": 1,
                "name": "n1",
                "tags": {
                    "first_items": ["a", "b"],
                    "item_schema": "string",
                    "pruned_items": 1,
                    "total_items": 3,
                },
            },
        ],
        "item_schema": {"extra": "null", "id": "number", "name": "string", "tags": "array"},
        "pruned_items": 48,
        "total_items": 50,
    }
    small = json.dumps([1, 2])
    assert prune(small, PruneRules()) == small  # nothing to cut: untouched, byte for byte


def test_toolprune_keeps_5_lines_before_and_15_after_each_error() -> None:
    from pytest_ctxeval.strategies.pruning import PruneRules, prune

    lines = [f"INFO step {i}" for i in range(100)]
    lines[40] = "Traceback (most recent call last):"
    lines[90] = "ERROR disk full"
    out = prune("\n".join(lines), PruneRules()).splitlines()
    assert out[0] == "[… 35 lines pruned …]"
    assert out[1:22] == lines[35:56]
    assert out[22] == "[… 29 lines pruned …]"
    assert out[23:] == lines[85:100]


def test_toolprune_keeps_head_and_tail_of_logs_without_errors_and_of_file_reads() -> None:
    from pytest_ctxeval.strategies.pruning import PruneRules, prune

    log = [f"INFO event {i}" for i in range(100)]
    assert prune("\n".join(log), PruneRules()).splitlines() == [
        *log[:10],
        "[… 70 lines pruned …]",
        *log[80:],
    ]
    source = [f"{i + 1:>6}\tx = {i}" for i in range(100)]
    assert prune("\n".join(source), PruneRules()).splitlines() == [
        *source[:20],
        "[… 60 lines pruned …]",
        *source[80:],
    ]


def test_toolprune_keeps_the_last_result_whole_and_prunes_the_older_ones() -> None:
    dump = json.dumps(list(range(30)))
    session = [*tool_turn(1, dump), *tool_turn(2, dump)][:-1]
    messages = fed(ToolPruneStrategy(), session).window().messages
    assert json.loads(messages[2]["content"])["total_items"] == 30
    assert messages[-1] == session[-1]
    everything = fed(ToolPruneStrategy(keep_last=2), session).window().messages
    assert everything == session


# --- subagent ----------------------------------------------------------------------


def test_subagent_sends_bulky_output_and_the_question_to_a_sub_call() -> None:
    model = FakeModel(reply="Row 7 holds the key.")
    bulky = "row data " * 100  # 200 "tokens"
    session = [*tool_turn(1, bulky), *tool_turn(2, "small")]
    strategy = fed(SubagentStrategy(threshold_tokens=50), session, model)
    messages = strategy.window().messages
    assert messages[2]["content"] == (
        "[sub-agent read 200 tokens of query output and answered]\nRow 7 holds the key."
    )
    assert messages[6] == session[6]  # small output: untouched
    (request,) = model.requests
    assert [m["role"] for m in request] == ["system", "user", "user"]
    assert request[1]["content"] == "Output of the tool query:\n" + bulky
    assert request[2]["content"] == "Run step 1."  # the question the agent was working on
    strategy.window()
    assert strategy.sub_calls == 1  # each output is delegated once
    assert strategy.sub_prompt_tokens == messages_tokens(request, words)


def test_subagent_against_the_mock_model_reports_sub_call_tokens_apart() -> None:
    conv = conversation(LONG_SESSION)
    trace = run(conv, SubagentStrategy())
    full = run(conv, SubagentStrategy(threshold_tokens=10**9))  # never delegates
    assert trace.strategy_calls == 1 and full.strategy_calls == 0
    assert trace.strategy_prompt_tokens > 5000  # the sub-call read the 300-row dump
    assert trace.cumulative_input_tokens < full.cumulative_input_tokens / 3


# --- observation-mask and cache-hostile ---------------------------------------------


def test_observation_mask_clears_all_but_the_last_three_results() -> None:
    session = [m for n in range(1, 6) for m in tool_turn(n, f"line a\nline b {n}")]
    messages = fed(ObservationMaskStrategy(), session).window().messages
    results = [m["content"] for m in messages if m["role"] == "tool"]
    assert results == ["[Old tool result content cleared: 2 lines]"] * 2 + [
        f"line a\nline b {n}" for n in (3, 4, 5)
    ]
    assert [m for m in messages if m["role"] != "tool"] == [
        m for m in session if m["role"] != "tool"
    ]


def test_cache_hostile_stamps_a_changing_time_and_kills_the_prefix_cache() -> None:
    strategy = fed(CacheHostileStrategy(), chat(2))
    first, second = strategy.window().messages, strategy.window().messages
    # After the system prompt, which stays first and unaltered like every strategy's.
    assert first[0]["content"] == "You are terse.\n\nCurrent time: 2026-01-01T00:00:01Z"
    assert second[0]["content"] == "You are terse.\n\nCurrent time: 2026-01-01T00:00:02Z"
    assert first[1:] == second[1:] == chat(2)[1:]
    conv = conversation(LONG_SESSION)
    hostile, full = run(conv, CacheHostileStrategy()), run(conv, FullStrategy())
    assert all(r.shared_prefix_tokens == 0 for r in hostile.requests)
    assert sum(r.shared_prefix_tokens for r in full.requests[1:]) > 0.9 * sum(
        r.prompt_tokens for r in full.requests[:-1]
    )
    assert hostile.cumulative_input_tokens == pytest.approx(full.cumulative_input_tokens, rel=0.01)
    with pytest.raises(ValueError, match="unknown inner strategy 'nope'"):
        CacheHostileStrategy(inner="nope")


# --- presets ------------------------------------------------------------------------


def write_preset(folder: Path, filename: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_the_shipped_presets_resolve_to_their_kind_and_params() -> None:
    from pytest_ctxeval.strategies.registry import available, resolve

    presets = ["headtail-200", "sliding-8", "summarize-aggressive", "truncate-tokens-2000"]
    specs = resolve(",".join(presets), preset_dirs=[])  # shipped: no project folder needed
    assert [s.name for s in specs] == presets
    assert specs[1].params == {"turns": 8}
    assert params_of(specs[3].create()) == {"unit": "tokens", "max_tokens": 2000}
    everything = available(preset_dirs=[])
    assert {"compaction-every-5", "rag-k5"} <= set(everything)


def test_the_repos_own_presets_add_to_the_shipped_ones() -> None:
    from pytest_ctxeval.strategies.presets import PresetFactory
    from pytest_ctxeval.strategies.registry import available

    everything = available(preset_dirs=[REPO / "strategies"])
    own = everything["summarize-v1"]
    assert isinstance(own, PresetFactory) and own.path.parent == REPO / "strategies"
    assert own.replaces is None and "sliding-8" in everything


def test_all_means_the_built_ins_only(tmp_path: Path) -> None:
    from pytest_ctxeval.strategies.registry import resolve

    write_preset(tmp_path, "mine.yaml", "name: mine\nkind: sliding\n")
    names = [s.name for s in resolve("all", preset_dirs=[tmp_path])]
    assert "mine" not in names and "sliding" in names
    assert [s.name for s in resolve("mine", preset_dirs=[tmp_path])] == ["mine"]


def test_presets_are_found_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.strategies.registry import resolve

    write_preset(
        tmp_path / "strategies", "tiny.yml", "name: tiny\nkind: sliding\nparams: {turns: 1}\n"
    )
    monkeypatch.chdir(tmp_path)
    (spec,) = resolve("tiny")
    assert params_of(spec.create()) == {"turns": 1, "keep_system": True}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\nkind: sliding\nturns: 3\n", "turns: Extra inputs are not permitted"),
        (
            "name: x\nkind: slidin\n",
            "unknown kind 'slidin' (did you mean 'sliding'?); known kinds: "
            "anthropic-context-editing, cache-hostile, compaction",
        ),
        (
            "name: x\nkind: sliding\nparams: {turn: 3}\n",
            "kind 'sliding' has no parameter 'turn' (did you mean 'turns'?); "
            "it accepts: turns, keep_system",
        ),
        (
            "name: x\nkind: sliding\nparams: {turns: 0}\n",
            "kind 'sliding' rejects turns=0: sliding: turns must be >= 1, got 0",
        ),
        (
            "name: x\nkind: sliding\nparams: {turns: eight}\n",
            "kind 'sliding' rejects turns='eight': turns takes int",
        ),
        ("name: sliding\nkind: sliding\n", "preset name 'sliding' is taken by a built-in strategy"),
        ("name: 'bad name'\nkind: sliding\n", "name: String should match pattern"),
        ("name: x\nkind: [sliding\n", "cannot read the preset"),
        ("- just a list\n", "expected a mapping with name, kind, params, description"),
    ],
)
def test_bad_presets_are_clear_errors_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    from pytest_ctxeval.strategies.presets import PresetError
    from pytest_ctxeval.strategies.registry import UnknownStrategyError, resolve

    path = write_preset(tmp_path, "broken.yaml", text)
    with pytest.raises(PresetError) as info:
        resolve("x", preset_dirs=[tmp_path])
    assert str(info.value).startswith(f"{path}:")  # the file first (and its line, when known)
    assert message in str(info.value)
    assert isinstance(info.value, UnknownStrategyError)  # the plugin reports it as a usage error
    assert [s.name for s in resolve("full,all", preset_dirs=[tmp_path])][0] == "full"  # unaffected


def test_duplicate_preset_names_name_both_files(tmp_path: Path) -> None:
    from pytest_ctxeval.strategies.presets import PresetError
    from pytest_ctxeval.strategies.registry import available

    write_preset(tmp_path, "a.yaml", "name: twin\nkind: full\n")
    second = write_preset(tmp_path, "b.yaml", "name: twin\nkind: full\n")
    with pytest.raises(PresetError, match=f"{second}: preset 'twin' is also defined in .*a.yaml"):
        available(preset_dirs=[tmp_path])


def test_ctxeval_strategies_lists_the_presets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ctxeval.cli import main

    write_preset(
        tmp_path / "strategies",
        "s3.yaml",
        "name: s3\nkind: sliding\nparams: {turns: 3}\ndescription: Three.\n",
    )
    monkeypatch.chdir(tmp_path)
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    assert "compaction-cached " in out and "observation-mask " in out
    assert re.search(r"^s3 +sliding\(turns=3\)  Three\.  \[s3\.yaml\]$", out, re.MULTILINE)
    write_preset(tmp_path / "strategies", "bad.yaml", "name: bad\nkind: nope\n")
    assert main(["strategies"]) == 1
    assert "bad.yaml: unknown kind 'nope'" in capsys.readouterr().err


# --- third-party strategies -----------------------------------------------------------


def test_an_installed_entry_point_is_a_strategy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.strategies.registry import UnknownStrategyError, available, resolve

    (tmp_path / "ctxeval_fake_plugin.py").write_text(
        "from pytest_ctxeval.strategies.full import FullStrategy\n"
        "class Mine(FullStrategy):\n    name = 'mine'\n",
        encoding="utf-8",
    )
    dist = tmp_path / "ctxeval_fake_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ctxeval-fake-plugin\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[pytest_ctxeval.strategies]\nfake-full = ctxeval_fake_plugin:Mine\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "fake-full" in available(preset_dirs=[])
    (spec,) = resolve("fake-full", preset_dirs=[])
    assert type(spec.create()).__name__ == "Mine"
    assert "fake-full" not in [s.name for s in resolve("all", preset_dirs=[])]
    # Parameters are checked against the installed class, loaded for the check.
    with pytest.raises(UnknownStrategyError, match="strategy 'fake-full' has no parameter 'x'"):
        resolve("fake-full(x=1)", preset_dirs=[])


EXAMPLE = "pytest_ctxeval.examples.trim:TrimMessagesStrategy"
# The example calls LangChain's own trim_messages (the `langchain` extra).
needs_langchain = pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None,
    reason='langchain-core is not installed: pip install -e ".[langchain]"',
)


@needs_langchain
def test_the_example_calls_langchains_own_trim_messages() -> None:
    import langchain_core.messages

    from pytest_ctxeval.examples import trim

    assert trim.trim_messages is langchain_core.messages.trim_messages


@needs_langchain
def test_the_example_strategy_ships_in_the_package() -> None:
    from pytest_ctxeval.strategies.registry import resolve

    (spec,) = resolve(EXAMPLE, preset_dirs=[])
    assert spec.name == "example-trim"
    (spec,) = resolve(EXAMPLE + "(max_tokens=500)", preset_dirs=[])
    assert spec.name == "example-trim[max_tokens:500]" and spec.params == {"max_tokens": 500}


@needs_langchain
def test_a_copy_of_the_example_resolves_from_a_projects_strategies_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.examples import trim
    from pytest_ctxeval.strategies.registry import resolve

    folder = tmp_path / "strategies"
    folder.mkdir()
    (folder / "my_trim.py").write_text(Path(trim.__file__).read_text("utf-8"), "utf-8")
    for module in ("my_trim", "strategies.my_trim"):
        monkeypatch.delitem(sys.modules, module, raising=False)
        (spec,) = resolve(f"{module}:TrimMessagesStrategy", preset_dirs=[folder])
        assert spec.name == "example-trim" and spec.factory.__module__ == module
        monkeypatch.delitem(sys.modules, module)


@needs_langchain
def test_the_example_strategy_trims_like_trim_messages_and_keeps_the_invariants() -> None:
    from pytest_ctxeval.strategies.invariants import check_invariants
    from pytest_ctxeval.strategies.registry import resolve

    (spec,) = resolve(EXAMPLE, preset_dirs=[])
    # 10 tokens for the request and system prompt, 14 a message: room for the last 4.
    strategy = fed(spec.factory(max_tokens=70), chat(10), FakeModel())
    messages = strategy.window().messages
    assert messages == [chat(10)[0], *chat(10)[-4:]]
    assert messages_tokens(messages, words) == 66
    assert check_invariants(spec.factory) == []
    assert check_invariants(spec.factory, params={"max_tokens": 50}) == []


# --- a new chat (multi-session) ---------------------------------------------------------

TWO_CHATS = """
    id: two-chats
    system: You are a personal assistant.
    sessions:
      - label: monday
        turns:
          - user: My daughter Leona is allergic to peanuts. Never serve peanut snacks.
          - assistant: Noted, no peanut snacks.
          - generate: {kind: chitchat, turns: 12, seed: 31}
      - label: friday
        turns:
          - user: Hi again, new week.
          - assistant: Welcome back!
    probes:
      - {id: allergy, user: "Which food is Leona allergic to?"}
"""


def probe_window(conv: Conversation, strategy: Any, question: str) -> list[Message]:
    trace = run(conv, strategy)
    fork = trace.strategy.fork()  # type: ignore[attr-defined]
    fork.add({"role": "user", "content": question})
    return list(fork.window().messages)


def text_of(messages: list[Message]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def test_rag_carries_earlier_chats_as_long_term_memory() -> None:
    conv = conversation(TWO_CHATS)
    window = probe_window(conv, RagStrategy(), "Which food is Leona allergic to?")
    assert "[turn 1]\n[user] My daughter Leona is allergic to peanuts." in text_of(window)
    assert "new week" in text_of(window) and "chitchat" not in text_of(window)


def test_compaction_carries_its_memory_and_ledger_into_the_next_chat() -> None:
    conv = conversation(TWO_CHATS)
    strategy = CompactionStrategy()
    window = probe_window(conv, strategy, "Which food is Leona allergic to?")
    # 13 turns: compacted once during the first chat, and its last 3 when it ended.
    assert strategy.compactions == 2 and strategy.total_turns_compacted == 13
    assert strategy.ledger.entries == ("Never serve peanut snacks.",)
    assert "Never serve peanut snacks." in window[0]["content"]
    assert [m["content"] for m in window[1:3]] == ["Hi again, new week.", "Welcome back!"]


@pytest.mark.parametrize(
    "strategy",
    [SummarizeStrategy(trigger_tokens=50), ToolPruneStrategy(), ObservationMaskStrategy()],
    ids=lambda s: s.name,
)
def test_other_strategies_start_each_chat_afresh(strategy: Any) -> None:
    window = probe_window(conversation(TWO_CHATS), strategy, "Which food is Leona allergic to?")
    assert window[0]["content"] == "You are a personal assistant."
    assert "peanut" not in text_of(window) and "Welcome back!" in text_of(window)
