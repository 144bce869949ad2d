"""Ask the probe: the window goes to the model, tool calls are answered by
the strategy's handler, a bounded number of steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..llm.client import ModelClient, ModelError
from ..llm.tokens import window_tokens
from ..strategies.base import Window
from .tool_round import not_offered, read_tool_call, tool_reply

# Rounds of tool calls answered before the model must answer (the last
# request offers no tools); a model still calling tools then is a runaway.
MAX_TOOL_STEPS = 4
# Tool calls answered for one probe, over all rounds.
MAX_TOOL_CALLS_PER_PROBE = 32


@dataclass
class ProbeAnswer:
    answer: str | None = None
    error: str | None = None
    llm_calls: int = 0
    memory_retrievals: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    # Prompt tokens of every request made for this probe (tool steps included).
    request_tokens: list[int] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)
    # The request was longer than the model's context window.
    context_exceeded: bool = False


def unusable_answer(content: str | None, finish_reason: str | None) -> str | None:
    """Why a final reply cannot be scored as an answer, or None when it can."""
    if content is None:
        return "the model returned no answer (content null)"
    if not content.strip():
        return "the model returned an empty answer"
    if finish_reason == "length":
        return "the answer was cut off at the token limit (finish_reason: length)"
    return None


def ask(client: ModelClient, window: Window, *, model: str, seed: int | None = None) -> ProbeAnswer:
    """The model's answer to the window, after answering its tool calls.

    An answer that is empty or was cut off at the token limit is not an
    answer: it comes back with ``error`` set, so it is never scored."""
    result = ProbeAnswer()
    messages = list(window.messages)
    calls = 0
    for step in range(MAX_TOOL_STEPS + 1):
        result.request_tokens.append(window_tokens(messages, window.tools, model))
        tools = window.tools if step < MAX_TOOL_STEPS else None
        try:
            completion = client.complete(messages, tools, seed=seed)
        except ModelError as exc:
            result.error = str(exc)
            result.context_exceeded = exc.context_exceeded
            return result
        result.llm_calls += 1
        result.cost_usd += completion.cost_usd
        result.latency_s += completion.latency_s
        if not completion.tool_calls:
            result.answer = completion.content
            result.error = unusable_answer(completion.content, completion.finish_reason)
            return result
        calls += len(completion.tool_calls)
        if calls > MAX_TOOL_CALLS_PER_PROBE:
            result.error = (
                f"runaway tool calls: {calls} for one probe, over the limit of "
                f"{MAX_TOOL_CALLS_PER_PROBE}; the probe got no answer"
            )
            return result
        if step == MAX_TOOL_STEPS:  # asked without tools, and still calling them
            break
        messages.append(
            {
                "role": "assistant",
                "content": completion.content,
                "tool_calls": completion.tool_calls,
            }
        )
        for call in completion.tool_calls:
            messages.append(_answer_tool_call(call, window, result))
    result.error = (
        f"runaway tool loop: the model still called tools after {MAX_TOOL_STEPS} rounds "
        "of tool calls (the limit); the probe got no answer"
    )
    return result


def _answer_tool_call(call: dict[str, Any], window: Window, result: ProbeAnswer) -> dict[str, Any]:
    read = read_tool_call(call)
    if read.args is None:
        content = read.error or ""
        result.tool_errors.append(content)
    elif window.tool_handler is None:
        content = not_offered(read.name)
        result.tool_errors.append(content)
    else:
        content = window.tool_handler(read.name, read.args)
        if read.name == "retrieve_memory":
            result.memory_retrievals += 1
    return tool_reply(call, read.name, content)
