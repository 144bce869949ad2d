"""The adapters run the libraries' own code: each window equals what the
library returns when called directly on the same messages."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval import load_strategy
from pytest_ctxeval.strategies.base import messages_tokens
from pytest_ctxeval.strategies.registry import UnknownStrategyError, resolve
from pytest_ctxeval.strategies.window_rules import window_violations

Message = dict[str, Any]

needs_langchain = pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None,
    reason='langchain-core is not installed: pip install -e ".[langchain]"',
)
needs_agents = pytest.mark.skipif(
    importlib.util.find_spec("agents") is None,
    reason='openai-agents is not installed: pip install -e ".[openai-agents]"',
)


def words(text: str) -> int:
    return len(text.split())


def agent_session(turns: int = 6) -> list[Message]:
    """A system prompt, user turns, assistant tool calls with ids and their
    results, a multi-part user message; the last message is the question."""
    messages: list[Message] = [{"role": "system", "content": "You are an ops assistant."}]
    for turn in range(1, turns + 1):
        messages.append({"role": "user", "content": f"turn {turn}: check service s{turn} now"})
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "status", "arguments": json.dumps({"service": f"s{turn}"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": f"s{turn} ok " * 5}
        )
        messages.append({"role": "assistant", "content": f"s{turn} is healthy."})
    messages.append(
        {"role": "user", "content": [{"type": "text", "text": "Which services did we check?"}]}
    )
    return messages


def fed(strategy: Any, messages: list[Message]) -> Any:
    for message in copy.deepcopy(messages):
        strategy.add(message)
    return strategy


# --- the registry and the public loader ------------------------------------------


def test_importing_the_registry_imports_no_adapter_or_library() -> None:
    code = (
        "import sys; from pytest_ctxeval.strategies.registry import strategy_kinds, resolve; "
        "kinds = strategy_kinds(); resolve('sliding', preset_dirs=[]); "
        "print('langchain-trim' in kinds, 'openai-agents-session' in kinds, "
        "sorted(m for m in sys.modules if m.startswith(('pytest_ctxeval.adapters.', "
        "'langchain', 'agents'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True True []"


@pytest.mark.parametrize(
    ("kind", "module", "extra"),
    [
        ("langchain-trim", "langchain_core", "langchain"),
        ("openai-agents-session", "agents", "openai-agents"),
        ("inspect-compaction", "inspect_ai", "inspect"),
    ],
)
def test_an_adapter_without_its_library_is_one_line_naming_the_extra(
    kind: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name == module or name.startswith(module + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    for written in (kind, f"toolprune+{kind}"):
        with pytest.raises(UnknownStrategyError) as raised:
            resolve(written, preset_dirs=[])
        message = str(raised.value)
        assert f'pip install "pytest-ctxeval[{extra}]"' in message
        assert repr(kind) in message and "\n" not in message


@needs_langchain
def test_load_strategy_builds_what_the_command_line_names(tmp_path: Path) -> None:
    strategy = load_strategy("langchain-trim(max_tokens=60,strategy=last)")
    assert strategy.name == "langchain-trim"
    fed(strategy, agent_session())
    window = strategy.window().messages
    assert window[-1] == agent_session()[-1] and window[0]["role"] == "system"
    assert len(window) < len(agent_session())
    sliding = load_strategy("sliding(turns=1)")
    fed(sliding, agent_session())
    assert sliding.window().messages == [agent_session()[0], agent_session()[-1]]
    (tmp_path / "tight.yaml").write_text(
        "name: tight-trim\nkind: langchain-trim\nparams: {max_tokens: 40}\n", "utf-8"
    )
    preset = load_strategy("tight-trim", preset_dirs=[tmp_path])
    assert preset.params()["max_tokens"] == 40  # type: ignore[attr-defined]
    pipeline = load_strategy("toolprune+langchain-trim(max_tokens=60)")
    fed(pipeline, agent_session())
    assert pipeline.window().messages[-1] == agent_session()[-1]
    with pytest.raises(UnknownStrategyError, match="has no parameter 'max_token'"):
        load_strategy("langchain-trim(max_token=5)")


# --- langchain-trim ----------------------------------------------------------------


def direct_trim(messages: list[Message], **kwargs: Any) -> list[Message]:
    """``trim_messages`` called directly, converted back by LangChain's own
    ``convert_to_openai_messages``."""
    from langchain_core.messages import convert_to_openai_messages, trim_messages

    from pytest_ctxeval.adapters.langchain_trim import to_langchain

    kept = trim_messages(to_langchain(messages), **kwargs)
    return convert_to_openai_messages(kept)  # type: ignore[return-value]


def openai_form(messages: list[Message]) -> list[Message]:
    from langchain_core.messages import convert_to_openai_messages

    from pytest_ctxeval.adapters.langchain_trim import to_langchain

    return convert_to_openai_messages(to_langchain(messages))  # type: ignore[return-value]


@needs_langchain
def test_messages_convert_to_langchain_and_back_unchanged() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from pytest_ctxeval.adapters.langchain_trim import from_langchain, to_langchain

    session = agent_session(2)
    converted = to_langchain(session)
    assert [type(m) for m in converted[:5]] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    assert converted[2].tool_calls[0]["id"] == "call_1"
    assert converted[2].tool_calls[0]["args"] == {"service": "s1"}
    assert converted[3].tool_call_id == "call_1"
    assert converted[-1].content == [{"type": "text", "text": "Which services did we check?"}]
    assert from_langchain(converted) == session


@needs_langchain
@pytest.mark.parametrize(
    "params",
    [
        {"max_tokens": 60},
        {"max_tokens": 120, "start_on": "human"},
        {"max_tokens": 90, "start_on": None, "end_on": None},
        {"max_tokens": 60, "include_system": False},
        {"max_tokens": 70, "allow_partial": True},
        {"max_tokens": 100, "strategy": "first"},
        {"max_tokens": 40, "token_counter": "approximate"},
    ],
    ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()),
)
def test_langchain_trim_window_is_what_trim_messages_returns(params: dict[str, Any]) -> None:
    from langchain_core.messages.utils import count_tokens_approximately

    from pytest_ctxeval.adapters.langchain_trim import LangChainTrimStrategy, from_langchain

    session = agent_session()
    strategy = fed(LangChainTrimStrategy(**params), session)
    kwargs = strategy.trim_kwargs()
    counter = (
        count_tokens_approximately
        if params.get("token_counter") == "approximate"
        else lambda ms: messages_tokens(from_langchain(ms), strategy.count_tokens)
    )
    expected = direct_trim(session, **{**kwargs, "token_counter": counter})
    window = strategy.window().messages
    if params.get("strategy") == "first":
        # The library keeps the session's start; the question is appended.
        assert openai_form(window[:-1]) == expected and window[-1] == session[-1]
        assert openai_form(session[-1:])[0] not in expected
        return
    assert openai_form(window) == expected
    assert len(window) < len(session)


@needs_langchain
def test_langchain_trim_keeps_the_window_rules_and_the_session_own_dicts() -> None:
    from pytest_ctxeval.adapters.langchain_trim import LangChainTrimStrategy

    session = agent_session()
    for budget in (40, 60, 90, 150, 400):
        strategy = fed(LangChainTrimStrategy(max_tokens=budget), session)
        window = strategy.window().messages
        assert window_violations(session, strategy.window()) == [], budget
        kept = strategy.history
        assert all(any(m is h for h in kept) for m in window)


@needs_langchain
def test_langchain_trim_max_tokens_is_the_harness_budget() -> None:
    from pytest_ctxeval.adapters.langchain_trim import LangChainTrimStrategy
    from pytest_ctxeval.strategies.base import StrategyContext

    strategy = LangChainTrimStrategy(max_tokens=80)
    strategy.setup(StrategyContext(count_tokens=words))
    fed(strategy, agent_session())
    window = strategy.window().messages
    assert messages_tokens(window, words) <= 80
    assert messages_tokens(strategy.history[-len(window) - 4 :], words) > 80


# --- openai-agents-session ---------------------------------------------------------


async def sdk_window(messages: list[Message], limit: int | None = None) -> Any:
    """What the SDK's own session holds and returns, used directly."""
    from agents import SessionSettings, SQLiteSession

    from pytest_ctxeval.adapters.openai_agents import to_items

    session = SQLiteSession("direct", session_settings=SessionSettings(limit=limit))
    for index, message in enumerate(messages):
        if message["role"] != "system":
            await session.add_items(to_items(message, index))
    return await session.get_items()


def keep_last_four(data: Any) -> Any:
    """A ``call_model_input_filter`` as a team writes one."""
    from agents.run_config import ModelInputData

    return ModelInputData(
        input=data.model_data.input[-4:], instructions=data.model_data.instructions
    )


async def shout_instructions(data: Any) -> Any:
    from agents.run_config import ModelInputData

    return ModelInputData(
        input=data.model_data.input,
        instructions=(data.model_data.instructions or "") + " Be brief.",
    )


@needs_agents
def test_messages_convert_to_sdk_items_and_back_unchanged() -> None:
    from pytest_ctxeval.adapters.openai_agents import to_items, to_messages

    session = agent_session(2)
    items = [item for i, m in enumerate(session[1:], 1) for item in to_items(m, i)]
    call = next(item for item in items if item.get("type") == "function_call")
    assert call == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "status",
        "arguments": '{"service": "s1"}',
    }
    result = next(item for item in items if item.get("type") == "function_call_output")
    assert result["call_id"] == "call_1" and result["output"] == "s1 ok " * 5
    assert items[-1] == {
        "role": "user",
        "content": [{"type": "input_text", "text": "Which services did we check?"}],
    }
    back = to_messages(items)
    assert back[1]["tool_calls"] == session[2]["tool_calls"]
    assert back[2] == session[3] and back[0] == session[1]
    assert back[3]["role"] == "assistant" and back[3]["content"] == "s1 is healthy."


@needs_agents
@pytest.mark.parametrize("limit", [None, 6, 7])
@pytest.mark.parametrize("db", ["memory", "file"])
def test_agents_session_window_is_what_the_sdk_session_returns(limit: int | None, db: str) -> None:
    import asyncio

    from pytest_ctxeval.adapters.openai_agents import AgentsSessionStrategy, to_messages

    session = agent_session()
    strategy = fed(AgentsSessionStrategy(limit=limit, db=db), session)  # type: ignore[arg-type]
    items = asyncio.run(sdk_window(session, limit))
    window = strategy.window().messages
    assert window[0] is strategy.history[0]
    assert window[1:] == to_messages(items)
    if limit is None:
        assert window == session
        assert window_violations(session, strategy.window()) == []
    # The SDK's limit counts items, so it may leave a tool result without its call.
    if limit == 7:
        assert window[1]["role"] == "tool"
        assert any(
            v.startswith("tool-pairs") for v in window_violations(session, strategy.window())
        )


@needs_agents
def test_agents_session_runs_the_teams_input_filter() -> None:
    from pytest_ctxeval.adapters.openai_agents import AgentsSessionStrategy

    session = agent_session()
    here = f"{__name__}:keep_last_four"
    strategy = fed(AgentsSessionStrategy(input_filter=here), session)
    assert strategy.window().messages == [session[0], *session[-4:]]
    loud = fed(AgentsSessionStrategy(input_filter=f"{__name__}:shout_instructions"), session)
    window = loud.window().messages
    assert window[0] == {"role": "system", "content": "You are an ops assistant. Be brief."}
    assert window[1:] == session[1:]
    fork = loud.fork()
    fork.add({"role": "user", "content": "one more"})
    assert len(fork.window().messages) == len(session) + 1
    assert len(loud.window().messages) == len(session)
    with pytest.raises(UnknownStrategyError, match="cannot load input_filter 'nope:f'"):
        resolve("openai-agents-session(input_filter='nope:f')", preset_dirs=[])


@needs_langchain
def test_include_system_false_may_drop_the_system_prompt_and_the_rules_allow_it() -> None:
    from pytest_ctxeval.adapters.langchain_trim import LangChainTrimStrategy
    from pytest_ctxeval.strategies.window_rules import keeps_system_prompt

    session = agent_session()
    params = {"max_tokens": 60, "include_system": False}
    window = fed(LangChainTrimStrategy(**params), session).window()  # type: ignore[arg-type]
    assert window.messages[0]["role"] != "system"
    assert keeps_system_prompt(params) is False
    assert window_violations(session, window, keep_system=keeps_system_prompt(params)) == []
    assert keeps_system_prompt({"max_tokens": 60}) is True
