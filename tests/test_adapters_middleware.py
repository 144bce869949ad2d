"""LangChain v1's agent middleware as strategies: each window equals what the
middleware itself returns on the same messages, and the summariser's calls go
through the harness's model as strategy calls."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from typing import Any

import pytest
from agent_scenarios import agent_recall_scenario
from conftest import CtxProject, assert_no_traceback, output
from test_adapters import agent_session, fed

from pytest_ctxeval.strategies.base import StrategyContext, messages_tokens
from pytest_ctxeval.strategies.invariants import check_invariants, oracle_context
from pytest_ctxeval.strategies.registry import UnknownStrategyError, resolve
from pytest_ctxeval.strategies.window_rules import window_violations

Message = dict[str, Any]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("langchain") is None,
    reason='langchain is not installed: pip install -e ".[langchain]"',
)


def counting_context() -> tuple[StrategyContext, list[list[Message]]]:
    """The oracle's context, keeping every request the strategy sends."""
    base = oracle_context()
    calls: list[list[Message]] = []

    def complete(messages: list[Message]) -> str:
        calls.append(copy.deepcopy(messages))
        assert base.complete is not None
        return base.complete(messages)

    return StrategyContext(base.count_tokens, complete, base.complete_json), calls


def built(spec: str, messages: list[Message]) -> tuple[Any, list[list[Message]]]:
    (strategy_spec,) = resolve(spec, preset_dirs=[])
    strategy = strategy_spec.create()
    ctx, calls = counting_context()
    strategy.setup(ctx)  # type: ignore[attr-defined]
    return fed(strategy, messages), calls


def lc_openai(messages: list[Any]) -> list[Message]:
    from langchain_core.messages import convert_to_openai_messages

    return convert_to_openai_messages(messages)  # type: ignore[return-value]


def shown(value: Any) -> str:
    """A parameter value as the command line writes it."""
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def harness_counter(messages: Any) -> int:
    from pytest_ctxeval.adapters.langchain_trim import from_langchain

    return messages_tokens(from_langchain(list(messages)), oracle_context().count_tokens)


# --- langchain-summarization ---------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"trigger_tokens": 100, "keep_messages": 6},
        {"trigger_tokens": None, "trigger_messages": 10, "keep_tokens": 120},
        {"trigger_tokens": 100, "keep_messages": 3, "trim_tokens_to_summarize": 60},
    ],
    ids=["tokens-messages", "messages-tokens", "trimmed-input"],
)
def test_langchain_summarization_window_is_what_the_middleware_returns(
    params: dict[str, Any],
) -> None:
    from langchain.agents.middleware import SummarizationMiddleware

    from pytest_ctxeval.adapters.langchain_model import harness_chat_model
    from pytest_ctxeval.adapters.langchain_trim import to_langchain

    written = ",".join(f"{k}={shown(v)}" for k, v in params.items())
    spec = f"langchain-summarization({written})"
    session = agent_session()
    strategy, calls = built(spec, session)
    window = strategy.window().messages

    # The middleware called directly on the same state, with the same model.
    direct_ctx, direct_calls = counting_context()
    assert direct_ctx.complete is not None
    trigger = (
        ("tokens", params["trigger_tokens"])
        if params["trigger_tokens"] is not None
        else ("messages", params["trigger_messages"])
    )
    keep = (
        ("tokens", params["keep_tokens"])
        if "keep_tokens" in params
        else ("messages", params["keep_messages"])
    )
    middleware = SummarizationMiddleware(
        harness_chat_model(direct_ctx.complete, "test"),
        trigger=trigger,
        keep=keep,
        token_counter=harness_counter,
        trim_tokens_to_summarize=params.get("trim_tokens_to_summarize", 4000),
    )
    update = middleware.before_model({"messages": to_langchain(session[1:])}, None)  # type: ignore[arg-type]
    assert update is not None, "the session is over the trigger: the middleware summarises"
    direct = [m for m in update["messages"] if m.type != "remove"]

    assert lc_openai(to_langchain(window[1:])) == lc_openai(direct)
    assert window[0] == session[0] and window[-1] == session[-1]
    assert window[1]["content"].startswith("Here is a summary of the conversation to date:")
    assert len(window) < len(session)
    # One summary, written by the run's model through the harness: the same
    # request the middleware sends on its own, LangChain's own prompt in it.
    assert calls == direct_calls and len(calls) == 1
    assert "Context Extraction Assistant" in calls[0][0]["content"]
    assert window_violations(session, strategy.window()) == []


def test_langchain_summarization_goes_on_from_the_summarised_state() -> None:
    session = agent_session(turns=10)
    strategy, calls = built("langchain-summarization(trigger_tokens=150,keep_messages=6)", [])
    windows = []
    for message in copy.deepcopy(session):
        strategy.add(message)
        if message["role"] == "user":
            windows.append(strategy.window().messages)
    summaries = [w[1]["content"] for w in windows if len(w) > 1 and "summary" in str(w[1])]
    assert len(calls) >= 2, "a later summary folds in the earlier one"
    # The second summary request shows the first summary: the state was replaced.
    assert "Here is a summary of the conversation to date" in json.dumps(calls[1])
    assert summaries and windows[-1][-1] == session[-1]
    assert (
        check_invariants(
            lambda **_: resolve(
                "langchain-summarization(trigger_tokens=300,keep_messages=8)", preset_dirs=[]
            )[0].create()
        )
        == []
    )


def test_langchain_summarization_without_a_trigger_is_a_usage_error() -> None:
    with pytest.raises(UnknownStrategyError, match="trigger_tokens or trigger_messages"):
        resolve("langchain-summarization(trigger_tokens=null)", preset_dirs=[])[0].create()


# --- langchain-context-editing -------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"trigger": 50, "keep": 2},
        {"trigger": 50, "keep": 1, "clear_tool_inputs": True, "placeholder": "[gone]"},
        {"trigger": 50, "keep": 0, "clear_at_least": 20},
        {"trigger": 100000},
    ],
    ids=["keep-2", "inputs", "at-least", "under-trigger"],
)
def test_langchain_context_editing_window_is_what_the_middleware_sends(
    params: dict[str, Any],
) -> None:
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
    from langchain.agents.middleware.types import ModelRequest, ModelResponse

    from pytest_ctxeval.adapters.langchain_trim import to_langchain

    written = ",".join(f"{k}={shown(v)}" for k, v in params.items())
    spec = f"langchain-context-editing({written})"
    session = agent_session()
    strategy, calls = built(spec, session)
    window = strategy.window().messages

    sent: list[Any] = []

    def handler(request: Any) -> Any:
        sent.extend(request.messages)
        return ModelResponse(result=[])

    middleware = ContextEditingMiddleware(
        edits=[ClearToolUsesEdit(**params)], token_counter=harness_counter
    )
    middleware.wrap_model_call(
        ModelRequest(model=None, messages=to_langchain(session[1:])),  # type: ignore[arg-type]
        handler,
    )
    assert lc_openai(to_langchain(window[1:])) == lc_openai(sent)
    assert window[0] == session[0] and window[-1] == session[-1] and calls == []
    cleared = [m for m in window if m["role"] == "tool" and m["content"] != session[3]["content"]]
    if params["trigger"] < 1000:
        assert cleared, "over the trigger, older tool results are cleared"
    else:
        assert window == session
    assert window_violations(session, strategy.window()) == []


def test_langchain_context_editing_spares_excluded_tools() -> None:
    session = agent_session()
    strategy, _ = built("langchain-context-editing(trigger=50,keep=0)", session)
    tools = [m for m in strategy.window().messages if m["role"] == "tool"]
    assert tools and all(m["content"] == "[cleared]" for m in tools)
    strategy.exclude_tools = ["status"]
    assert strategy.window().messages == session


@pytest.mark.parametrize("kind", ["langchain-summarization", "langchain-context-editing"])
def test_a_middleware_kind_without_langchain_is_one_line_naming_the_extra(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name == "langchain" or name.startswith("langchain."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "langchain", None)
    with pytest.raises(UnknownStrategyError) as raised:
        resolve(kind, preset_dirs=[])
    assert 'pip install "pytest-ctxeval[langchain]"' in str(raised.value)
    assert "\n" not in str(raised.value)


# --- end to end ----------------------------------------------------------------------

AGENT = agent_recall_scenario()


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_the_summariser_calls_are_strategy_calls_in_a_run(
    ctx: CtxProject, workers: tuple[str, ...]
) -> None:
    ctx.scenario("agent", AGENT)
    kinds = (
        "langchain-summarization(trigger_tokens=600,keep_messages=4)",
        "langchain-context-editing(trigger=300,keep=0)",
    )
    result = ctx.run(f"--ctx-strategy=full,{','.join(kinds)}", *workers)
    assert_no_traceback(result)
    records = ctx.results()
    assert all(not r["error"] for r in records), [r["error"] for r in records if r["error"]]
    by = {(r["strategy"].split("[")[0], r["probe"]): r for r in records}
    summarised = by[("langchain-summarization", "launch-code")]
    # The summary keeps the launch code said before the cut (the mock keeps identifiers).
    assert summarised["verdict"] == "pass", output(result)
    assert summarised["session_strategy_calls"] >= 1
    assert summarised["prompt_tokens"] < by[("full", "launch-code")]["prompt_tokens"]
    edited = by[("langchain-context-editing", "launch-code")]
    assert edited["session_strategy_calls"] == 0 and edited["verdict"] == "pass"
    assert edited["prompt_tokens"] < by[("full", "launch-code")]["prompt_tokens"]
