"""The live loop of one rollout: each user turn goes to the strategy, the
strategy builds the window, the model answers (its tool calls answered by
the stubs, or by the strategy's own tools such as ``retrieve_memory``), and
what the model wrote goes back to the strategy as the session's next messages.

Bounded like a probe (see evaluate.probe): a model still calling tools after
``max_tool_rounds`` rounds, too many tool calls, or an empty or cut-off
answer ends the rollout with an error at that turn; the turns before it keep
their answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...llm.cassettes import CallContext, call_context
from ...llm.client import ModelClient, ModelError
from ...llm.tokens import count_text_tokens, window_tokens
from ...strategies.base import ContextStrategy, Message, Window, copy_message
from ..ledger import FactLedger
from ..probe import MAX_TOOL_CALLS_PER_PROBE, unusable_answer
from ..simulate import SessionTrace, StrategyCallCounter
from ..tool_round import not_offered, read_tool_call, tool_reply
from .script import RolloutScript
from .stubs import Recorded, ToolStubs


@dataclass
class TurnRecord:
    turn: int  # 1-based user turn
    answer: str | None = None
    # The tool calls the model made on this turn: {tool, args}.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    # Files a write_file stub received on this turn: path -> content.
    written: dict[str, str] = field(default_factory=dict)
    prompt_tokens: list[int] = field(default_factory=list)


@dataclass
class Rollout:
    strategy: str
    turns: list[TurnRecord] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    llm_calls: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    strategy_calls: int = 0
    ledger: FactLedger | None = None

    @property
    def request_tokens(self) -> list[int]:
        return [t for turn in self.turns for t in turn.prompt_tokens]


@dataclass(frozen=True)
class RolloutSetup:
    client: ModelClient
    model: str
    scenario: str
    stubs: list[Any]  # the scenario's ToolStub specs
    max_tool_rounds: int
    # The tool outputs the scenario's own session recorded (see stubs).
    recorded: list[Recorded] = field(default_factory=list)


def run_rollout(
    script: RolloutScript,
    strategy: ContextStrategy,
    name: str,
    setup: RolloutSetup,
    ledger: FactLedger,
) -> Rollout:
    rollout = Rollout(name, ledger=ledger)
    counted = SessionTrace(strategy=strategy)
    init = getattr(strategy, "setup", None)
    if callable(init):
        counter = counted.counter = StrategyCallCounter(setup.client, counted)
        context = CallContext(setup.scenario, name, "rollout", "strategy call in the rollout")
        with call_context(context):
            init(counter.context(lambda text: count_text_tokens(text, setup.model)))
    stubs = ToolStubs(setup.stubs, setup.recorded)
    if script.system:
        strategy.add({"role": "system", "content": script.system})
    try:
        for number, turn in enumerate(script.turns, start=1):
            if turn.new_chat:
                end_session = getattr(strategy, "end_session", None)
                if callable(end_session):
                    end_session()
            record = TurnRecord(number)
            rollout.turns.append(record)
            strategy.add({"role": "user", "content": turn.text})
            context = CallContext(setup.scenario, name, "rollout", f"rollout turn {number}")
            with call_context(context):
                error = _model_turn(strategy, stubs, setup, rollout, record, counted)
            if error is not None:
                rollout.error = f"turn {number}: {error}"
                break
    except Exception as exc:  # a strategy's bug ends its rollout, not the run
        at = len(rollout.turns)
        rollout.error = f"turn {at}: strategy {name!r} raised {type(exc).__name__}: {exc}"
    rollout.files = dict(stubs.files)
    rollout.strategy_calls = counted.strategy_calls
    rollout.cost_usd += counted.strategy_cost_usd
    return rollout


def _model_turn(
    strategy: ContextStrategy,
    stubs: ToolStubs,
    setup: RolloutSetup,
    rollout: Rollout,
    record: TurnRecord,
    counted: SessionTrace,
) -> str | None:
    """One assistant turn, tool rounds included; the error that ends the rollout, or None."""
    calls = 0
    for round_ in range(setup.max_tool_rounds + 1):
        before = counted.strategy_calls
        window = strategy.window()
        assert rollout.ledger is not None
        rollout.ledger.observe(window, compacted=counted.strategy_calls > before)
        offered = round_ < setup.max_tool_rounds
        tools = [*window.tools, *stubs.tools] if offered else []
        record.prompt_tokens.append(window_tokens(window.messages, tools, setup.model))
        try:
            completion = setup.client.complete(window.messages, tools or None)
        except ModelError as exc:
            return f"model error: {exc}"
        rollout.llm_calls += 1
        rollout.cost_usd += completion.cost_usd
        rollout.latency_s += completion.latency_s
        if not completion.tool_calls:
            record.answer = completion.content
            problem = unusable_answer(completion.content, completion.finish_reason)
            if problem is not None:
                return problem
            strategy.add({"role": "assistant", "content": completion.content})
            return None
        if not offered:
            break
        calls += len(completion.tool_calls)
        if calls > MAX_TOOL_CALLS_PER_PROBE:
            return (
                f"runaway tool calls: {calls} in one turn, over the limit of "
                f"{MAX_TOOL_CALLS_PER_PROBE}"
            )
        message: Message = {
            "role": "assistant",
            "content": completion.content,
            "tool_calls": completion.tool_calls,
        }
        strategy.add(copy_message(message))
        for call in completion.tool_calls:
            strategy.add(_answer(call, window, stubs, record))
    return (
        f"runaway tool loop: the model still called tools after {setup.max_tool_rounds} "
        "rounds of tool calls (rollout.max_tool_rounds)"
    )


def _answer(call: dict[str, Any], window: Window, stubs: ToolStubs, record: TurnRecord) -> Message:
    read = read_tool_call(call)
    if read.args is None:
        content = read.error or ""
        record.tool_calls.append({"tool": read.name, "args": read.raw})
    else:
        record.tool_calls.append({"tool": read.name, "args": read.args})
        if read.name in stubs.names:
            before = dict(stubs.files)
            content = stubs.answer(read.name, read.args)
            record.written.update({p: c for p, c in stubs.files.items() if before.get(p) != c})
        elif window.tool_handler is not None:
            content = str(window.tool_handler(read.name, read.args))
        else:
            content = not_offered(read.name)
    return tool_reply(call, read.name, content)
