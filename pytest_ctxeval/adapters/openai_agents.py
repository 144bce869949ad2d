"""``openai-agents-session``: the OpenAI Agents SDK's own session, run unchanged.

The session's messages are stored, as Responses-API input items, in the
SDK's ``SQLiteSession`` (in memory, or in a temporary file with
``db=file``).  A window is what the SDK's runner sends: the session's items
(``get_items``, honouring ``limit``, as the runner applies the SDK's
``SessionSettings(limit=...)``)
with the system prompt as the agent's instructions, passed through
``call_model_input_filter`` when one is given as ``module:function`` (it
receives the SDK's ``CallModelData`` and returns a ``ModelInputData``, as in
``RunConfig(call_model_input_filter=...)``).  The items go back to chat
messages through the SDK's own converter (``Converter.items_to_messages``,
what its chat-completions models send); a message that comes back unchanged
is the very dict the session holds.  A new chat (multi-session scenarios)
starts a new session, as a chat app starts a new ``session_id``.

``session`` picks the session class: ``sqlite`` (the SDK's
``SQLiteSession``), or the trimming and summarising sessions the SDK
documents, ``trimming`` (``max_turns``) and ``summarizing``
(``keep_last_n_turns``, ``context_limit``; its summaries are written by the
run's model, as strategy calls).  The SDK ships those two as cookbook recipes,
not classes (its ``OpenAIResponsesCompactionSession`` calls OpenAI's API), so
they are implemented from the recipe in :mod:`.agents_recipes`.

Tested against openai-agents 0.24.0 (the ``openai-agents`` extra asks for >= 0.2).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import tempfile
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..strategies.base import BaseStrategy, Message, Window, content_text
from . import require
from .agents_recipes import as_chat_input, session_classes, summary_request

KIND = "openai-agents-session"
T = TypeVar("T")


def to_items(message: Message, index: int = 0) -> list[dict[str, Any]]:
    """One chat message as the Responses-API input items the SDK stores."""
    role = message.get("role")
    content = message.get("content")
    if role in ("user", "system"):
        return [{"role": role, "content": _input_content(content)}]
    if role == "assistant":
        items: list[dict[str, Any]] = []
        text = content_text(message)
        if text or not message.get("tool_calls"):
            items.append(
                {
                    "id": f"msg_{index}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for call in message.get("tool_calls") or []:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": call["function"]["name"],
                    "arguments": call["function"].get("arguments") or "{}",
                }
            )
        return items
    if role == "tool":
        return [
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id"),
                "output": content_text(message),
            }
        ]
    raise ValueError(f"{KIND}: a message with role {role!r} has no Responses-API item")


def _input_content(content: Any) -> Any:
    if not isinstance(content, list):
        return "" if content is None else content
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        else:
            parts.append(part)
    return parts


def to_messages(items: list[Any]) -> list[Message]:
    """Items as chat messages, by the SDK's own converter."""
    converter = require("agents.models.chatcmpl_converter", KIND).Converter
    return [dict(m) for m in converter.items_to_messages(items)]


def _key(message: Message) -> str:
    return json.dumps(message, sort_keys=True, default=str)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run the SDK's async session call, also from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(coroutine)))
    thread.start()
    thread.join()
    return result[0]


def _run_config_module() -> Any:
    """Where CallModelData and ModelInputData live: ``agents.run_config``
    (``agents.run`` in releases before it was split out)."""
    try:
        return importlib.import_module("agents.run_config")
    except ImportError:
        return require("agents.run", KIND)


def load_filter(spec: str) -> Any:
    """``module:function`` imported; a ValueError naming what is wrong."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"input_filter must be module:function, got {spec!r}")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load input_filter {spec!r}: {exc}") from None
    if not callable(function):
        raise ValueError(f"input_filter {spec!r} is not callable")
    return function


class AgentsSessionStrategy(BaseStrategy):
    name = KIND
    description = "The OpenAI Agents SDK's SQLiteSession and call_model_input_filter, unchanged."

    def __init__(
        self,
        limit: int | None = None,
        input_filter: str | None = None,
        db: Literal["memory", "file"] = "memory",
        session: Literal["sqlite", "trimming", "summarizing"] = "sqlite",
        max_turns: int = 8,
        keep_last_n_turns: int = 3,
        context_limit: int = 3,
    ) -> None:
        super().__init__()
        require("agents", KIND)
        for name, value in (("limit", limit), ("max_turns", max_turns)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value!r}")
        self.limit = limit
        self.input_filter = input_filter
        self.db = db
        self.session = session
        self.max_turns = max_turns
        self.keep_last_n_turns = keep_last_n_turns
        self.context_limit = context_limit
        self._filter = load_filter(input_filter) if input_filter else None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._session: Any = self._new_session()

    def params(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"limit": self.limit, "input_filter": self.input_filter}
        if self.session == "sqlite":
            return {**shown, "db": self.db}
        if self.session == "trimming":
            return {**shown, "session": self.session, "max_turns": self.max_turns}
        return {
            **shown,
            "session": self.session,
            "keep_last_n_turns": self.keep_last_n_turns,
            "context_limit": self.context_limit,
        }

    def _summarize(self, items: list[dict[str, Any]]) -> str:
        """The summarising session's summariser: the run's model, counted."""
        if self.ctx is None or self.ctx.complete is None:
            raise RuntimeError(
                f"{KIND}(session=summarizing) needs a model: the harness passes one "
                "through setup(StrategyContext)"
            )
        return self.ctx.complete(summary_request(items)).strip()

    def _new_session(self) -> Any:
        if self.session != "sqlite":
            trimming, summarizing = session_classes()
            if self.session == "trimming":
                return trimming("ctxeval", max_turns=self.max_turns)
            return summarizing(self._summarize, self.keep_last_n_turns, self.context_limit)
        agents = require("agents", KIND)
        path: str | Path = ":memory:"
        if self.db == "file":
            self._tmp = tempfile.TemporaryDirectory(prefix="ctxeval-agents-")
            path = Path(self._tmp.name) / "session.db"
        return agents.SQLiteSession("ctxeval", db_path=path)

    def _items(self, messages: list[Message]) -> list[dict[str, Any]]:
        return [
            item
            for index, m in enumerate(messages)
            if m.get("role") != "system"
            for item in to_items(m, index)
        ]

    def add(self, message: Message) -> None:
        super().add(message)
        if message.get("role") != "system":
            _run(self._session.add_items(to_items(message, len(self.history) - 1)))

    def _rebuild(self) -> None:
        """A fresh session holding the history (after a fork or a revision)."""
        if self._session is not None:
            self._session.close()
        self._session = self._new_session()
        items = self._items(self.history)
        if items:
            _run(self._session.add_items(items))

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self._rebuild()

    def end_session(self) -> None:
        super().end_session()
        self._rebuild()

    def fork(self) -> AgentsSessionStrategy:
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.history = list(self.history)
        clone._tmp = None
        if self.session == "sqlite":
            clone._session = None
            clone._rebuild()
            return clone
        # A recipe session is copied, not rebuilt: rebuilding would summarise again.
        clone._session = self._session.copy()
        if self.session == "summarizing":
            clone._session.summarize = clone._summarize
        return clone

    def instructions(self) -> str | None:
        system = [content_text(m) for m in self.history if m.get("role") == "system"]
        return "\n\n".join(system) if system else None

    def model_input(self) -> Any:
        """The SDK's ``ModelInputData`` for the next call, after the filter."""
        agents = require("agents", KIND)
        run_config = _run_config_module()
        # The limit as the runner applies a SessionSettings(limit=...).
        items = _run(self._session.get_items(limit=self.limit))
        data = run_config.ModelInputData(input=list(items), instructions=self.instructions())
        if self._filter is None:
            return data
        agent = agents.Agent(name="ctxeval", instructions=data.instructions)
        updated = self._filter(run_config.CallModelData(model_data=data, agent=agent, context=None))
        if asyncio.iscoroutine(updated):
            updated = _run(updated)
        if not isinstance(updated, run_config.ModelInputData):
            raise TypeError(
                f"input_filter {self.input_filter!r} must return a ModelInputData, "
                f"got {type(updated).__name__}"
            )
        return updated

    def window(self) -> Window:
        data = self.model_input()
        # Messages the SDK sends unchanged are the session's own dicts.
        originals = {
            _key(converted): m
            for index, m in enumerate(self.history)
            if m.get("role") != "system"
            for converted in to_messages(to_items(m, index))[:1]
        }
        items = list(data.input)
        if self.session == "summarizing":
            items = [as_chat_input(item) for item in items]
        sent = [originals.get(_key(m), m) for m in to_messages(items)]
        system = [m for m in self.history if m.get("role") == "system"]
        if data.instructions is not None:
            same = system and data.instructions == self.instructions() and len(system) == 1
            head = system if same else [{"role": "system", "content": data.instructions}]
            sent = head + sent
        return Window(messages=sent)
