"""Session cost: every simulated request priced, the prompt cache per
provider over the whole session, and the per-request series in the record."""

from __future__ import annotations

import pytest

from pytest_ctxeval.evaluate.session_costs import fill_session_fields
from pytest_ctxeval.evaluate.simulate import SessionTrace, simulate
from pytest_ctxeval.llm import tokens
from pytest_ctxeval.llm.client import ModelClient
from pytest_ctxeval.llm.prompt_cache import ANTHROPIC, OPENAI
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.loader import parse_conversations
from pytest_ctxeval.scenario.schema import Scenario
from pytest_ctxeval.strategies.compaction import CachedCompactionStrategy, CompactionStrategy
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import HeadTailStrategy
from pytest_ctxeval.strategies.sliding import SlidingStrategy

ORACLE = "ctxeval/oracle"
# gpt-4o-mini in litellm's bundled map: $0.15 / 1M input, $0.075 cached, $0.60 output.
INPUT, CACHED, OUTPUT = 0.15e-6, 0.075e-6, 0.60e-6


def agent_session_yaml(turns: int = 25) -> str:
    """A long agent session: a ~1,500-token system prompt, then per turn a
    request, a ~800-token tool output and a short reply; three probes."""
    rules = " ".join(
        f"Rule {i}: keep the service {i} healthy and report its state." for i in range(120)
    )
    lines = ["id: agent", f"system: {rules!r}", "turns:"]
    for turn in range(turns):
        lines += [
            f"  - user: Check the traces of service {turn}.",
            f"  - tool: {{name: query_spans, args: {{service: s{turn}}}, "
            f"generate: {{kind: spans, tokens: 800, seed: {600 + turn}}}}}",
            f"  - assistant: Done with service {turn}; nothing blocking.",
        ]
    lines += [
        "probes:",
        '  - {id: first, user: "Which service did we check first?", expect: {contains: "0"}}',
        '  - {id: last, user: "Which service did we check last?"}',
        '  - {id: count, user: "How many services did we check?"}',
    ]
    return "\n".join(lines) + "\n"


def long_agent_session() -> Conversation:
    return parse_conversations(agent_session_yaml(), "agent.yaml")[0]


def text_of(n_tokens: int) -> str:
    """Exactly ``n_tokens`` tokens (see test_accounting.text_of)."""
    words = n_tokens
    while True:
        text = " ".join(["hello"] * words)
        count = tokens.count_text_tokens(text)
        if count == n_tokens:
            return text
        words -= max(1, count - n_tokens) if count > n_tokens else -1


def field_session(turns: int = 50, system: int = 4_000, per_turn: int = 3_200) -> Conversation:
    """The field's session, as docs/costs.md lays it out: the system prompt,
    then per turn an empty user message and a reply of ``per_turn`` tokens
    (the turn's new tokens arrive with the reply, after its request)."""
    messages = [{"role": "system", "content": text_of(system)}]
    reply = text_of(per_turn)
    for _ in range(turns):
        messages += [{"role": "user", "content": ""}, {"role": "assistant", "content": reply}]
    scenario = Scenario.model_validate({"id": "field", "probes": [{"id": "p", "user": "q"}]})
    return Conversation(scenario=scenario, messages=messages, probes=[])


def run(conversation: Conversation, strategy: object, model: str = ORACLE, **kw: object):
    return simulate(conversation, strategy, client=ModelClient(ORACLE), model=model, **kw)  # type: ignore[arg-type]


def record_of(trace: SessionTrace, model: str = ORACLE) -> ResultRecord:
    record = ResultRecord(
        scenario="s", strategy="x", model=model, probe="p", verdict="pass", classification="ok"
    )
    fill_session_fields(record, trace, model)
    return record


# -- the field's figure -----------------------------------------------------------------------


def test_the_field_figure_without_chat_overhead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "PER_MESSAGE_OVERHEAD", 0)
    monkeypatch.setattr(tokens, "PER_REQUEST_OVERHEAD", 0)
    record = record_of(run(field_session(), FullStrategy()))
    assert record.session_input_tokens == 50 * 4_000 + (50 * 49 // 2) * 3_200 == 4_120_000


def test_the_field_figure_with_chat_overhead() -> None:
    record = record_of(run(field_session(), FullStrategy()))
    # Request k (0-based) sends 2k + 2 messages at 4 tokens each, plus 3 per request:
    # sum over k < 50 of (8k + 11) = 8 * 1,225 + 550 = 10,350.
    assert record.session_input_tokens == 4_120_000 + 10_350
    # The replies are the session's output: 50 x 3,200 tokens.
    assert record.session_output_tokens == 50 * 3_200


def test_the_session_is_priced_request_by_request() -> None:
    model = "gpt-4o-mini"
    record = record_of(run(field_session(), FullStrategy(), model=model), model)
    assert record.cache_model == "openai"
    input_tokens, output_tokens = 4_130_350, 160_000
    assert record.session_cost_usd == pytest.approx(input_tokens * INPUT + output_tokens * OUTPUT)
    # Each request reads the previous one's messages from the cache, in 128-token steps.
    prompts = record.session_prompt_tokens
    cached = sum((p - 3) // 128 * 128 for p in prompts[:-1])
    assert record.session_cached_tokens == cached
    assert record.session_cache_hit_ratio == pytest.approx(cached / input_tokens)
    assert record.session_cache_hit_ratio > 0.9
    assert record.session_cached_cost_usd == pytest.approx(
        (input_tokens - cached) * INPUT + cached * CACHED + output_tokens * OUTPUT
    )


def test_anthropic_rules_charge_cache_writes() -> None:
    model = "anthropic/claude-sonnet-4-5"
    trace = run(field_session(10, 2_000, 500), FullStrategy(), model=model)
    record = record_of(trace, model)
    assert record.cache_model == "anthropic"
    writes = record.session_requests["cache_write_tokens"]
    # The first request writes its whole prompt but the reply priming; later ones the new part.
    assert writes[0] == record.session_prompt_tokens[0] - 3
    assert record.session_cache_write_tokens == sum(writes) > 0
    assert record.session_cached_tokens > 0


def test_the_mock_model_costs_nothing_but_gets_openai_rules() -> None:
    record = record_of(run(field_session(5, 2_000, 500), FullStrategy()))
    assert (record.session_cost_usd, record.session_cached_cost_usd) == (0.0, 0.0)
    assert record.cache_model == "openai" and record.session_cached_tokens > 0


def test_the_rule_set_can_be_chosen() -> None:
    session = field_session(5, 2_000, 500)
    anthropic = record_of(run(session, FullStrategy(), cache_rules=ANTHROPIC))
    openai = record_of(run(session, FullStrategy(), cache_rules=OPENAI))
    assert anthropic.cache_model == "anthropic" and openai.cache_model == "openai"
    assert anthropic.session_cache_write_tokens > 0 == openai.session_cache_write_tokens


def test_slow_turns_let_the_cache_expire() -> None:
    session = field_session(5, 2_000, 500)
    quick = record_of(run(session, FullStrategy(), seconds_per_request=30))
    slow = record_of(run(session, FullStrategy(), seconds_per_request=600))
    assert quick.session_cached_tokens > 0 == slow.session_cached_tokens


# -- the per-request series ---------------------------------------------------------------------


def numbered_session(turns: int) -> Conversation:
    messages = [{"role": "system", "content": "You help."}]
    for turn in range(turns):
        messages += [
            {"role": "user", "content": f"Question {turn}: what is {turn} squared?"},
            {"role": "assistant", "content": f"{turn} squared is {turn * turn}."},
        ]
    scenario = Scenario.model_validate({"id": "numbered", "probes": [{"id": "p", "user": "q"}]})
    return Conversation(scenario=scenario, messages=messages, probes=[])


def test_sliding_evicts_more_with_every_turn_and_stores_nothing() -> None:
    record = record_of(run(numbered_session(6), SlidingStrategy(turns=2)))
    evicted = record.session_requests["evicted_tokens"]
    assert evicted[:2] == [0, 0]  # the window still holds the whole session
    assert evicted[2:] == sorted(evicted[2:]) and evicted[-1] > evicted[2] > 0
    assert "stored_tokens" not in record.session_requests  # all zeros: left out
    assert record.cache_breaks[0]["reason"] == "message_removed"


def test_headtail_stores_what_it_cuts() -> None:
    record = record_of(run(long_agent_session(), HeadTailStrategy()))
    assert max(record.session_requests["stored_tokens"]) > 0
    assert max(record.session_requests["summarised_tokens"]) > 0  # the cut messages


# -- compaction and compaction-cached ----------------------------------------------------------


def test_compaction_cached_keeps_the_system_prompt_cached_where_compaction_does_not() -> None:
    conversation = long_agent_session()
    plain = record_of(run(conversation, CompactionStrategy()))
    cached = record_of(run(conversation, CachedCompactionStrategy()))
    assert plain.session_strategy_calls == cached.session_strategy_calls > 0
    # Plain compaction rewrites the system prompt: the break is at message 0.
    assert {b["message"] for b in plain.cache_breaks} == {0}
    assert all(b["message"] > 0 for b in cached.cache_breaks)
    assert plain.session_requests["cached_tokens"] != cached.session_requests["cached_tokens"]
    # At each compaction the cached layout still reads its system prompt.
    first = plain.cache_breaks[0]["request"] - 1
    assert cached.session_requests["cached_tokens"][first] > 0
    assert plain.session_requests["cached_tokens"][first] == 0


# -- the run's settings name the rules ---------------------------------------------------------


def test_the_run_settings_choose_the_cache_rules_and_pace() -> None:
    from pytest_ctxeval.evaluate.runner import EvalSettings, Evaluator
    from pytest_ctxeval.strategies.registry import resolve

    conversation = numbered_session(4)
    spec = resolve("full")[0]
    default = Evaluator(EvalSettings(concurrency=1))._trace(conversation, spec, "x.yaml")
    chosen = Evaluator(
        EvalSettings(cache_model="anthropic", seconds_per_request=600, concurrency=1)
    )
    trace = chosen._trace(conversation, spec, "x.yaml")
    assert default.cache is not None and default.cache.rules.name == "openai"
    assert trace.cache is not None and trace.cache.rules.name == "anthropic"
    assert trace.cache.seconds_per_request == 600


def test_unknown_cache_rules_are_named_in_the_error() -> None:
    from pytest_ctxeval.evaluate.session_costs import cache_rules_named

    assert cache_rules_named(None) is None
    assert cache_rules_named("anthropic") is ANTHROPIC
    with pytest.raises(ValueError, match="unknown prompt-cache rules 'gemini'"):
        cache_rules_named("gemini")
