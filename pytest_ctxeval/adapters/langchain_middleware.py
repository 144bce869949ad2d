"""``langchain-summarization`` and ``langchain-context-editing``: LangChain v1's
agent middleware, run unchanged over the session.

LangChain's agent keeps the conversation in its state (``state["messages"]``,
the system prompt apart) and runs each middleware around every model call:

- ``SummarizationMiddleware.before_model`` may replace the state: everything
  before the kept messages becomes one human message holding the summary,
  and the agent goes on from that state (later summaries summarise the
  summary).  Its model is the run's model, through
  :func:`.langchain_model.harness_chat_model`, so its calls are strategy calls.
- ``ContextEditingMiddleware.wrap_model_call`` edits a copy of the messages
  for the one call (``ClearToolUsesEdit`` puts a placeholder in older tool
  results); the state keeps the originals.

The state is held as the session's own dicts (converted to LangChain messages
for each call and back, a message the library kept unchanged coming back as
the very dict the session holds), so a fork is a copy of plain data.

Tested against langchain 1.5.2 and langchain-core 1.8.3 (the ``langchain``
extra asks for langchain >= 1.0).

``token_counter``: ``harness`` (default) counts as every budget here is
counted, ``approximate`` is LangChain's default ``count_tokens_approximately``.
"""

from __future__ import annotations

from typing import Any, Literal

from ..strategies.base import BaseStrategy, Message, Window, messages_tokens, split_system
from . import require
from .langchain_model import harness_chat_model
from .langchain_trim import back_to_session, from_langchain, to_langchain

SUMMARIZATION = "langchain-summarization"
CONTEXT_EDITING = "langchain-context-editing"
MIDDLEWARE = "langchain.agents.middleware"
Counter = Literal["harness", "approximate"]


def token_counter(strategy: BaseStrategy, method: Counter, kind: str) -> Any:
    """The ``token_counter`` the middleware is given."""
    if method == "approximate":
        return require("langchain_core.messages.utils", kind).count_tokens_approximately
    return lambda ms: messages_tokens(from_langchain(list(ms)), strategy.count_tokens)


def _positive(name: str, value: int | None, *, zero: bool = False) -> None:
    if value is not None and (value < 0 or (value == 0 and not zero)):
        raise ValueError(f"{name} must be >= {0 if zero else 1}, got {value!r}")


class LangChainSummarizationStrategy(BaseStrategy):
    name = SUMMARIZATION
    description = "LangChain v1's SummarizationMiddleware, unchanged, on the run's model."

    def __init__(
        self,
        trigger_tokens: int | None = 8000,
        trigger_messages: int | None = None,
        keep_messages: int | None = 20,
        keep_tokens: int | None = None,
        trim_tokens_to_summarize: int | None = 4000,
        token_counter: Counter = "harness",
    ) -> None:
        super().__init__()
        require(MIDDLEWARE, SUMMARIZATION)
        for name, value in (
            ("trigger_tokens", trigger_tokens),
            ("trigger_messages", trigger_messages),
            ("keep_tokens", keep_tokens),
            ("trim_tokens_to_summarize", trim_tokens_to_summarize),
        ):
            _positive(name, value)
        _positive("keep_messages", keep_messages, zero=True)
        if trigger_tokens is None and trigger_messages is None:
            raise ValueError("set trigger_tokens or trigger_messages: without one it never runs")
        if keep_messages is None and keep_tokens is None:
            raise ValueError("set keep_messages or keep_tokens (keep_tokens wins when both are)")
        self.trigger_tokens = trigger_tokens
        self.trigger_messages = trigger_messages
        self.keep_messages = keep_messages
        self.keep_tokens = keep_tokens
        self.trim_tokens_to_summarize = trim_tokens_to_summarize
        self.token_counter = token_counter
        # LangChain's state["messages"]: the chat so far, as the middleware left it.
        self.state: list[Message] = []
        self.summaries_written = 0

    def params(self) -> dict[str, Any]:
        return {
            "trigger_tokens": self.trigger_tokens,
            "trigger_messages": self.trigger_messages,
            "keep_messages": self.keep_messages,
            "keep_tokens": self.keep_tokens,
            "trim_tokens_to_summarize": self.trim_tokens_to_summarize,
            "token_counter": self.token_counter,
        }

    def middleware_kwargs(self) -> dict[str, Any]:
        """``SummarizationMiddleware``'s keyword arguments but the model."""
        trigger: dict[str, int] = {}
        if self.trigger_tokens is not None:
            trigger["tokens"] = self.trigger_tokens
        if self.trigger_messages is not None:
            trigger["messages"] = self.trigger_messages
        keep = (
            ("tokens", self.keep_tokens)
            if self.keep_tokens is not None
            else ("messages", self.keep_messages)
        )
        return {
            # One (kind, value) pair, or LangChain's all-of clause for both.
            "trigger": next(iter(trigger.items())) if len(trigger) == 1 else trigger,
            "keep": keep,
            "token_counter": token_counter(self, self.token_counter, SUMMARIZATION),
            "trim_tokens_to_summarize": self.trim_tokens_to_summarize,
        }

    def middleware(self) -> Any:
        if self.ctx is None or self.ctx.complete is None:
            raise RuntimeError(
                f"{SUMMARIZATION} needs a model: the harness passes one through "
                "setup(StrategyContext)"
            )
        module = require(MIDDLEWARE, SUMMARIZATION)
        model = harness_chat_model(self.ctx.complete, SUMMARIZATION)
        return module.SummarizationMiddleware(model, **self.middleware_kwargs())

    def add(self, message: Message) -> None:
        super().add(message)
        if message.get("role") != "system":
            self.state.append(message)

    def revise(self, index: int, message: Message) -> None:
        old = self.history[index]
        super().revise(index, message)
        self.state = [message if m is old else m for m in self.state]

    def end_session(self) -> None:
        """A new chat is a new LangChain thread: a fresh state."""
        super().end_session()
        self.state = []

    def window(self) -> Window:
        system, _ = split_system(self.history)
        update = self.middleware().before_model({"messages": to_langchain(self.state)}, None)
        if update is not None:
            kept = [m for m in update["messages"] if m.type != "remove"]
            self.state = back_to_session(self.state, kept)
            self.summaries_written += 1
        return Window(messages=system + self.state)


class LangChainContextEditingStrategy(BaseStrategy):
    name = CONTEXT_EDITING
    description = "LangChain v1's ContextEditingMiddleware with ClearToolUsesEdit, unchanged."

    def __init__(
        self,
        trigger: int = 100_000,
        clear_at_least: int = 0,
        keep: int = 3,
        clear_tool_inputs: bool = False,
        exclude_tools: list[str] | None = None,
        placeholder: str = "[cleared]",
        token_counter: Counter = "harness",
    ) -> None:
        super().__init__()
        require(MIDDLEWARE, CONTEXT_EDITING)
        _positive("trigger", trigger, zero=True)
        _positive("clear_at_least", clear_at_least, zero=True)
        _positive("keep", keep, zero=True)
        self.trigger = trigger
        self.clear_at_least = clear_at_least
        self.keep = keep
        self.clear_tool_inputs = clear_tool_inputs
        self.exclude_tools = list(exclude_tools or [])
        self.placeholder = placeholder
        self.token_counter = token_counter

    def params(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "clear_at_least": self.clear_at_least,
            "keep": self.keep,
            "clear_tool_inputs": self.clear_tool_inputs,
            "exclude_tools": self.exclude_tools,
            "placeholder": self.placeholder,
            "token_counter": self.token_counter,
        }

    def middleware(self) -> Any:
        module = require(MIDDLEWARE, CONTEXT_EDITING)
        edit = module.ClearToolUsesEdit(
            trigger=self.trigger,
            clear_at_least=self.clear_at_least,
            keep=self.keep,
            clear_tool_inputs=self.clear_tool_inputs,
            exclude_tools=tuple(self.exclude_tools),
            placeholder=self.placeholder,
        )
        return module.ContextEditingMiddleware(
            edits=[edit], token_counter=token_counter(self, self.token_counter, CONTEXT_EDITING)
        )

    def window(self) -> Window:
        """What the middleware hands the model: captured in the handler it wraps."""
        system, rest = split_system(self.history)
        types = require("langchain.agents.middleware.types", CONTEXT_EDITING)
        sent: list[Any] = []

        def handler(request: Any) -> Any:
            sent.extend(request.messages)
            return types.ModelResponse(result=[])

        request = types.ModelRequest(model=_NO_MODEL, messages=to_langchain(rest))
        self.middleware().wrap_model_call(request, handler)
        return Window(messages=system + back_to_session(rest, sent))


# The edit never calls the model; ModelRequest only needs something in its place.
_NO_MODEL: Any = None
