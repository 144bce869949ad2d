"""``inspect-compaction``: Inspect AI's compaction strategies, run unchanged as
its agent loop applies them.

Inspect's agents (``react`` and the agent bridge) make one handler with
``inspect_ai.model.compaction(strategy, prefix=..., tools=...)`` and, before
every model call, send what ``compact_input(state.messages)`` returns,
appending the message it gives back (a summary) to the conversation.  This
kind does the same over the session: the prefix is the system prompt and the
chat's first user message (the sample's input), the conversation is the
session's messages plus the summaries Inspect appended.  The handler keeps
its own state across calls (what it has compacted so far); a fork starts a
handler from a copy of that state through Inspect's checkpointer, the way
Inspect resumes a sample.

The handler's model is the run's model, through a model provider registered
as ``ctxeval/harness``: its ``generate`` is the strategy's counted
``complete`` (the summary of ``summary`` and ``auto``), its token counting
the harness's tokenizer, so ``threshold`` (tokens, or a fraction of
``context_window``, 128,000 as Inspect assumes for a model it does not know)
is counted as every budget here is.  ``record_output`` is not called: the harness
makes the model call after the window is built, so Inspect counts every
window message by message, as it does before its first reply.

``strategy``: ``summary`` (``CompactionSummary``), ``edit``
(``CompactionEdit``: ``keep_tool_uses``, ``keep_tool_inputs``,
``exclude_tools``), ``trim`` (``CompactionTrim``: ``preserve``) or ``auto``
(``CompactionAuto``: the provider's native compaction where it has one, else
a summary; the harness's provider has none).

Tested against inspect-ai 0.3.285 (the ``inspect`` extra asks for >= 0.3.200).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any, Literal

from ..strategies.base import BaseStrategy, Message, Window, split_system
from . import require
from .openai_agents import _run

KIND = "inspect-compaction"
MODEL = "ctxeval/harness"


@cache
def _provider() -> type[Any]:
    """The ``ctxeval`` model provider, registered with Inspect once."""
    model = require("inspect_ai.model", KIND)

    class HarnessAPI(model.ModelAPI):  # type: ignore[misc, name-defined]
        def __init__(
            self,
            model_name: str,
            base_url: str | None = None,
            api_key: str | None = None,
            config: Any = None,
            complete: Any = None,
            count: Any = None,
        ) -> None:
            super().__init__(
                model_name=model_name,
                base_url=base_url,
                api_key=api_key,
                api_key_vars=[],
                config=config or model.GenerateConfig(),
            )
            self.complete = complete
            self.count = count

        async def count_text_tokens(self, text: str) -> int:
            return int(self.count(text))

        async def generate(
            self, input: list[Any], tools: Any, tool_choice: Any, config: Any
        ) -> Any:
            if self.complete is None:
                raise RuntimeError(f"{KIND} needs a model: the harness passes one through setup()")
            text = self.complete([to_message(m) for m in input])
            return model.ModelOutput.from_content(model=MODEL, content=text)

    @model.modelapi(name="ctxeval")  # type: ignore[untyped-decorator]
    def ctxeval() -> type[Any]:
        return HarnessAPI

    return HarnessAPI


def to_inspect(message: Message, ident: str) -> Any:
    """An OpenAI-style dict as an Inspect chat message with id ``ident``."""
    model = require("inspect_ai.model", KIND)
    role = message.get("role")
    content = message.get("content")
    text: Any = "" if content is None else content
    if isinstance(content, list):
        text = [
            model.ContentText(text=p.get("text", "")) for p in content if p.get("type") == "text"
        ]
    if role == "system":
        return model.ChatMessageSystem(content=text, id=ident)
    if role == "user":
        return model.ChatMessageUser(content=text, id=ident)
    if role == "assistant":
        from .langchain_trim import _args

        tool = require("inspect_ai.tool", KIND)
        calls = [
            tool.ToolCall(
                id=str(c.get("id")),
                function=c["function"]["name"],
                arguments=_args(c["function"].get("arguments")),
            )
            for c in message.get("tool_calls") or []
        ]
        return model.ChatMessageAssistant(content=text, tool_calls=calls or None, id=ident)
    if role == "tool":
        return model.ChatMessageTool(
            content=text,
            tool_call_id=str(message.get("tool_call_id")),
            function=message.get("name"),
            id=ident,
        )
    raise ValueError(f"{KIND}: a message with role {role!r} has no Inspect type")


def to_message(message: Any) -> Message:
    """An Inspect chat message as an OpenAI-style dict (text content)."""
    import json

    out: Message = {"role": message.role, "content": message.text}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.text or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        if message.function:
            out["name"] = message.function
    return out


class _Resume:
    """Inspect's checkpointer protocol, handing the handler a saved state."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def track(self, key: str, callback: Any, initial_value: Any, **_: Any) -> Any:
        if self.state is None:
            self.state = initial_value
        return self.state


class InspectCompactionStrategy(BaseStrategy):
    name = KIND
    description = "Inspect AI's compaction (summary, edit, trim, auto), as its agent loop runs it."

    def __init__(
        self,
        strategy: Literal["summary", "edit", "trim", "auto"] = "auto",
        threshold: float = 0.9,
        preserve: float = 0.8,
        keep_tool_uses: int = 3,
        keep_tool_inputs: bool = True,
        exclude_tools: list[str] | None = None,
        instructions: str | None = None,
        context_window: int = 128_000,
    ) -> None:
        super().__init__()
        require("inspect_ai.model", KIND)
        if threshold <= 0 or context_window < 1:
            raise ValueError(
                f"threshold must be > 0 and context_window >= 1, got {threshold!r}, "
                f"{context_window!r}"
            )
        self.strategy = strategy
        self.threshold = int(threshold) if threshold > 1 else threshold
        self.context_window = context_window
        self.preserve = preserve
        self.keep_tool_uses = keep_tool_uses
        self.keep_tool_inputs = keep_tool_inputs
        self.exclude_tools = list(exclude_tools or [])
        self.instructions = instructions
        self.compaction_strategy()  # Inspect checks its own parameters here
        # Inspect's side: the conversation (with appended summaries), the
        # handler and its saved state.
        self.conversation: list[Any] = []
        self._state: Any = None
        self._handler: Any = None

    def params(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"strategy": self.strategy, "threshold": self.threshold}
        if isinstance(self.threshold, float):
            shown["context_window"] = self.context_window
        if self.strategy == "trim":
            shown["preserve"] = self.preserve
        if self.strategy == "edit":
            shown.update(
                keep_tool_uses=self.keep_tool_uses,
                keep_tool_inputs=self.keep_tool_inputs,
                exclude_tools=self.exclude_tools,
            )
        if self.strategy in ("summary", "auto"):
            shown["instructions"] = self.instructions
        return shown

    def compaction_strategy(self) -> Any:
        c = require("inspect_ai.model", KIND)
        # A fraction of the window, resolved here: Inspect would look the
        # harness's model up, not find it and warn before assuming 128,000.
        threshold = (
            self.threshold
            if isinstance(self.threshold, int)
            else int(self.threshold * self.context_window)
        )
        if self.strategy == "trim":
            return c.CompactionTrim(threshold=threshold, preserve=self.preserve)
        if self.strategy == "edit":
            return c.CompactionEdit(
                threshold=threshold,
                keep_tool_uses=self.keep_tool_uses,
                keep_tool_inputs=self.keep_tool_inputs,
                exclude_tools=self.exclude_tools or None,
            )
        if self.strategy == "summary":
            return c.CompactionSummary(threshold=threshold, instructions=self.instructions)
        return c.CompactionAuto(threshold=threshold, instructions=self.instructions)

    def model(self) -> Any:
        _provider()
        complete = self.ctx.complete if self.ctx is not None else None
        return require("inspect_ai.model", KIND).get_model(
            MODEL, memoize=False, complete=complete, count=self.count_tokens
        )

    def _new_handler(self) -> Any:
        system, rest = split_system(self.history)
        first_user = next((i for i, m in enumerate(rest) if m.get("role") == "user"), None)
        prefix = self.conversation[
            : len(system) + (first_user + 1 if first_user is not None else 0)
        ]
        resume = _Resume(self._state)
        handler = require("inspect_ai.model", KIND).compaction(
            self.compaction_strategy(), prefix=prefix, model=self.model(), checkpointer=resume
        )
        self._state = resume.state
        return handler

    def add(self, message: Message) -> None:
        super().add(message)
        self.conversation.append(to_inspect(message, f"ctx-{len(self.history) - 1}"))

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        ident = f"ctx-{index}"
        self.conversation = [
            to_inspect(message, ident) if m.id == ident else m for m in self.conversation
        ]
        self._state, self._handler = None, None  # Inspect compacts afresh from the revision

    def end_session(self) -> None:
        """A new chat is a new Inspect sample: a new handler."""
        super().end_session()
        self.conversation = [to_inspect(m, f"ctx-{i}") for i, m in enumerate(self.history)]
        self._state, self._handler = None, None

    def fork(self) -> InspectCompactionStrategy:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.history = list(self.history)
        clone.conversation = copy.deepcopy(self.conversation)
        clone._state = self._state.model_copy(deep=True) if self._state is not None else None
        clone._handler = None  # resumed from the copied state on its next call
        return clone

    def window(self) -> Window:
        if self._handler is None:
            self._handler = self._new_handler()
        sent, appended = _run(self._handler.compact_input(list(self.conversation)))
        if appended is not None:
            self.conversation.append(appended)
        originals = {f"ctx-{i}": m for i, m in enumerate(self.history)}
        out: list[Message] = []
        for message in sent:
            original = originals.get(str(message.id))
            same = original is not None and _same(message, original)
            out.append(original if same and original is not None else to_message(message))
        return Window(messages=out)


def _same(message: Any, original: Message) -> bool:
    """Whether Inspect sends ``original`` unchanged."""
    return to_message(to_inspect(original, "")) == to_message(message)
