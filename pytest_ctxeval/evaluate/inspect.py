"""The exact window a strategy builds at one point of a scenario, for
`ctxeval show`: the quickest way to see why a strategy lost something."""

from __future__ import annotations

import copy
import json
from typing import Any

from ..llm.client import ModelClient
from ..llm.tokens import count_text_tokens, message_tokens, window_tokens
from ..scenario.build import Conversation
from ..strategies.base import Window, content_text
from ..strategies.registry import StrategySpec
from .simulate import SessionTrace, StrategyCallCounter


def window_at(
    conversation: Conversation,
    spec: StrategySpec,
    *,
    turn: int | None = None,
    probe: str | None = None,
    model: str = "ctxeval/oracle",
) -> Window:
    """The window for the model call at message ``turn`` (1-based, counting
    the session's messages after the system prompt), or at a probe (default:
    the first)."""
    strategy = spec.create()
    setup = getattr(strategy, "setup", None)
    if callable(setup):
        counter = StrategyCallCounter(ModelClient(model), SessionTrace(strategy=strategy))
        context = counter.context(lambda text: count_text_tokens(text, model))
        context.recorded = conversation.recorded_windows  # for ``recorded``
        setup(context)
    system = sum(1 for m in conversation.messages if m["role"] == "system")
    session = conversation.messages
    stop = len(session) if turn is None else min(system + turn - 1, len(session))
    for index, message in enumerate(session[:stop]):
        if index in conversation.session_starts:
            end_session = getattr(strategy, "end_session", None)
            if callable(end_session):
                end_session()
        strategy.add(copy.deepcopy(message))  # as in a run: the strategy gets copies
    if turn is None:
        case = next((p for p in conversation.probes if probe in (None, p.id)), None)
        if case is None:
            known = ", ".join(p.id for p in conversation.probes)
            raise ValueError(f"no probe {probe!r} in {conversation.id}; probes: {known}")
        strategy.add({"role": "user", "content": case.question})
    return strategy.window()


def render_window(window: Window, model: str = "ctxeval/oracle") -> str:
    tokens = window_tokens(window.messages, window.tools, model)
    lines = [
        f"== {len(window.messages)} messages, {tokens:,} prompt tokens, "
        f"{len(window.tools)} tool(s) =="
    ]
    for index, message in enumerate(window.messages, 1):
        head = f"-- [{index}] {message.get('role')}"
        if message.get("tool_call_id"):
            head += f" (result of {message.get('name') or 'tool'}, {message['tool_call_id']})"
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            head += f" -> {function.get('name')}({function.get('arguments', '')})"
        lines.append(f"{head}  [{message_tokens(message, model):,} tokens]")
        text = content_text(message)
        if text:
            lines.append(text)
    for tool in window.tools:
        lines.append("-- tool offered: " + json.dumps(tool.get("function", tool), sort_keys=True))
    return "\n".join(lines)


def window_json(window: Window) -> dict[str, Any]:
    return {"messages": window.messages, "tools": window.tools}
