"""``subagent``: bulky tool outputs are read by a sub-call, not by the main agent.

Anthropic's context-engineering guidance: a sub-agent explores with a clean
context of its own and hands back a condensed result, so the main window
holds the answer and not the raw material.  Here every tool output over
``threshold_tokens`` goes to one model call together with the user's current
question; the main window gets only the sub-call's answer in its place.

The sub-calls go through the harness's counted client: their tokens are in
``SessionTrace.strategy_prompt_tokens`` / ``strategy_completion_tokens``,
apart from the main windows' tokens.  The strategy also counts them itself
(``sub_calls``, ``sub_prompt_tokens``) for use outside the harness.

Known failure: the answer loses detail a later follow-up needs.
"""

from __future__ import annotations

from typing import Any

from .base import Message, content_text, messages_tokens
from .registration import register_strategy
from .tool_results import ToolResultStrategy
from .turns import check_prompt_version, last_user_text, require_at_least
from .unchanged_prefix import tracks_unchanged_prefix

SUBAGENT_PROMPT_VERSION = "v1"
# No rule words (never, always, must, only): the mock model would quote them.
SUBAGENT_SYSTEM_PROMPT = (
    "You are a sub-agent reading a tool output for the main agent. Answer the question from "
    "the tool output alone, quoting identifiers, numbers and names exactly. Keep the answer short."
)
TOOL_OUTPUT = "Output of the tool {name}:\n{output}"
NO_QUESTION = "What in this tool output matters for the task at hand?"
ANSWER = "[sub-agent read {tokens} tokens of {name} output and answered]\n{answer}"


@register_strategy("subagent")
@tracks_unchanged_prefix
class SubagentStrategy(ToolResultStrategy):
    name = "subagent"
    description = (
        "Tool outputs over a threshold are read by a sub-call; the window gets its answer."
    )

    def __init__(
        self,
        threshold_tokens: int = 2000,
        budget_tokens: int | None = None,
        prompt_version: str = SUBAGENT_PROMPT_VERSION,
    ) -> None:
        # keep_last=0: a bulky result is delegated even when it is the newest one.
        super().__init__(keep_last=0, budget_tokens=budget_tokens)
        check_prompt_version("subagent", prompt_version, SUBAGENT_PROMPT_VERSION)
        require_at_least("subagent", 1, threshold_tokens=threshold_tokens)
        self.threshold_tokens = threshold_tokens
        self.sub_calls = 0
        self.sub_prompt_tokens = 0

    def params(self) -> dict[str, Any]:
        return {
            "threshold_tokens": self.threshold_tokens,
            "budget_tokens": self.budget_tokens,
            "prompt_version": SUBAGENT_PROMPT_VERSION,
        }

    def condense(self, index: int, message: Message) -> Message:
        output = content_text(message)
        tokens = self.count_tokens(output)
        if tokens <= self.threshold_tokens:
            return message
        if self.ctx is None or self.ctx.complete is None:
            raise RuntimeError(
                "subagent needs a model: the harness passes one through setup(StrategyContext)"
            )
        name = str(message.get("name") or "tool")
        request = [
            {"role": "system", "content": SUBAGENT_SYSTEM_PROMPT},
            {"role": "user", "content": TOOL_OUTPUT.format(name=name, output=output)},
            # The question last: the model answers the last user message.
            {"role": "user", "content": last_user_text(self.history[:index]) or NO_QUESTION},
        ]
        answer = self.ctx.complete(request).strip()
        self.sub_calls += 1
        self.sub_prompt_tokens += messages_tokens(request, self.count_tokens)
        return {**message, "content": ANSWER.format(tokens=tokens, name=name, answer=answer)}
