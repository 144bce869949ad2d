"""``summarize``: a rolling, model-written summary of everything but the tail.

Defaults follow LangChain's ``SummarizationMiddleware``: once the window
passes ``trigger_tokens``, the messages before the last ``keep_messages``
(20) are rewritten by the model into one summary, with the summarizer's
input trimmed to its most recent ``trim_tokens`` (4,000); the summary goes in
as a user message right after the system prompt.  Each new summary folds the
previous one in (a rolling summary), and the cut is moved back so a tool call
never loses its result.

Known failure: the summarizer decides what matters, so identifiers and
constraints can silently vanish or mutate over several cycles.
"""

from __future__ import annotations

from typing import Any

from .base import (
    BaseStrategy,
    Message,
    Window,
    current_exchange_start,
    messages_tokens,
    system_length,
)
from .registration import register_strategy
from .turns import (
    check_prompt_version,
    fit_budget,
    require_at_least,
    safe_cut,
    trimmed_transcript,
)

# Bump when the prompts below change: results with different prompt versions
# are not comparable, so the version is part of the strategy's params.
SUMMARY_PROMPT_VERSION = "v1"
SUMMARY_SYSTEM_PROMPT = (
    "You maintain the running summary of a long conversation between a user and an "
    "assistant. Merge the previous summary and the new messages into one updated summary. "
    "Keep every identifier, number, file name, decision and user instruction exactly as "
    "written. Reply with the summary only."
)
# Starts with "Summarize": the mock model recognises the request by that word.
SUMMARY_REQUEST = "Summarize the conversation below into the updated running summary."
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
ROLES = ("user", "system")


@register_strategy("summarize")
class SummarizeStrategy(BaseStrategy):
    name = "summarize"
    description = "Rolling model-written summary of older messages; the last 20 stay raw."

    def __init__(
        self,
        trigger_tokens: int = 8000,
        keep_messages: int = 20,
        trim_tokens: int = 4000,
        summary_role: str = "user",
        budget_tokens: int | None = None,
        prompt_version: str = SUMMARY_PROMPT_VERSION,
    ) -> None:
        super().__init__()
        check_prompt_version("summarize", prompt_version, SUMMARY_PROMPT_VERSION)
        require_at_least(
            "summarize",
            1,
            trigger_tokens=trigger_tokens,
            keep_messages=keep_messages,
            trim_tokens=trim_tokens,
        )
        if summary_role not in ROLES:
            raise ValueError(
                f"summarize: summary_role must be user or system, got {summary_role!r}"
            )
        self.trigger_tokens = trigger_tokens
        self.keep_messages = keep_messages
        self.trim_tokens = trim_tokens
        self.summary_role = summary_role
        self.budget_tokens = budget_tokens
        self.summary: str | None = None
        self.summarized = 0  # messages after the system prompt the summary covers
        self.summaries_written = 0

    def params(self) -> dict[str, Any]:
        return {
            "trigger_tokens": self.trigger_tokens,
            "keep_messages": self.keep_messages,
            "trim_tokens": self.trim_tokens,
            "summary_role": self.summary_role,
            "budget_tokens": self.budget_tokens,
            "prompt_version": SUMMARY_PROMPT_VERSION,
        }

    def window(self) -> Window:
        # Indices into the history itself (``offset``: the system prompt's
        # length), never a copy of it: a turn costs its window, not the session.
        history = self.history
        offset = system_length(history)
        system = history[:offset]
        messages = self._layout(system, offset)
        if self._tokens(messages) > self.trigger_tokens:
            # Keep the last messages raw, never part of the current exchange,
            # and never a tool result without its call (cut counts after offset).
            cut = max(len(history) - offset - self.keep_messages, 0)
            exchange = max(current_exchange_start(history) - offset, 0)
            cut = max(safe_cut(history, offset + min(cut, exchange)), offset) - offset
            if cut > self.summarized:
                self.summary = self._summarize(history[offset + self.summarized : offset + cut])
                self.summarized = cut
                self.summaries_written += 1
                messages = self._layout(system, offset)
        protect = 1 if self.summary is not None else 0  # the summary goes after older raw turns
        return Window(messages=fit_budget(messages, self.budget_tokens, self.count_tokens, protect))

    def end_session(self) -> None:
        """Summaries belong to one chat (LangChain keeps them per thread)."""
        self.summary = None
        self.summarized = 0
        super().end_session()

    def _layout(self, system: list[Message], offset: int) -> list[Message]:
        if self.summary is None:
            return system + self.history[offset:]
        note = {"role": self.summary_role, "content": SUMMARY_PREFIX + self.summary}
        return system + [note] + self.history[offset + self.summarized :]

    def _tokens(self, messages: list[Message]) -> int:
        return messages_tokens(messages, self.count_tokens)

    def _summarize(self, messages: list[Message]) -> str:
        if self.ctx is None or self.ctx.complete is None:
            raise RuntimeError(
                "summarize needs a model: the harness passes one through setup(StrategyContext)"
            )
        parts = [SUMMARY_REQUEST]
        if self.summary:
            # Bullets stripped: re-summarised, they would pile up ("- - - fact").
            previous = "\n".join(line.lstrip("-*• ") for line in self.summary.splitlines())
            parts.append("Previous summary:\n" + previous)
        parts.append(
            "New messages:\n" + trimmed_transcript(messages, self.trim_tokens, self.count_tokens)
        )
        request = [
            {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        return self.ctx.complete(request).strip()
