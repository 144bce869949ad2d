"""``headtail``: keep the head and tail of bulky messages, store the middle.

The model sees where each middle went (a marker with a memory id) and can get
it back with the ``retrieve_memory`` tool, whose description lists every
memory with its position and a preview.  Repeated identical tool calls keep
only their latest result, so stale copies do not crowd the window.
"""

from __future__ import annotations

from typing import Any

from .base import BaseStrategy, Message, Window, content_text
from .memory_store import MemoryStore
from .registry import register_strategy

RETRIEVE_TOOL = "retrieve_memory"
TOOL_INTRO = "Retrieve text that was moved out of the conversation into memory. Stored memories:"
# The mock model parses these two formats; change them together with it.
MARKER = '\n[… {n} chars stored as memory {id}; call retrieve_memory(id="{id}") …]\n'
# No "of N messages" total: the tool definition must stay byte-identical
# between requests, or it breaks the provider's prompt cache every turn.
LISTING_LINE = "\nid={id} | position {position} | messages {count} | preview: {preview}"
OLDER = "\n({n} older memories, {first} to {last}, are not listed; retrieve_memory takes any id)"
SUPERSEDED = "[superseded by a later call of {name} with the same arguments]"


@register_strategy("headtail")
class HeadTailStrategy(BaseStrategy):
    name = "headtail"
    description = "Keep head and tail of each bulky message; its middle goes to retrievable memory."

    def __init__(self, head: int = 100, tail: int = 100, max_listed: int = 40) -> None:
        super().__init__()
        for param, value in (("head", head), ("tail", tail)):
            if value < 0:
                raise ValueError(f"headtail: {param} must be >= 0, got {value!r}")
        self.head = head
        self.tail = tail
        # The listing shows the newest memories only, so the tool definition
        # (sent with every request) stays bounded in a 1,000-turn session.
        self.max_listed = max_listed
        self.store = MemoryStore()
        # History never changes, so each message is shortened (and stored) once:
        # window() runs on every turn and must not re-read the bulky texts.
        self._shown: dict[int, Message] = {}  # message index -> as the window shows it
        self._listing: list[str] = []  # per memory: its line in the tool description
        self._tool: dict[str, Any] | None = None  # rebuilt only when a memory is added
        # Duplicate tool calls, tracked as messages arrive (not rescanned per window).
        self._calls: dict[Any, tuple[str, str]] = {}  # call id -> (name, arguments)
        self._latest: dict[tuple[str, str], int] = {}  # (name, arguments) -> newest result
        self._superseded: dict[int, Message] = {}  # index -> the placeholder message
        self._originals: list[str] = []

    def params(self) -> dict[str, Any]:
        return {"head": self.head, "tail": self.tail, "max_listed": self.max_listed}

    def window(self) -> Window:
        last = len(self.history) - 1
        superseded = self._superseded
        messages: list[Message] = []
        for index, message in enumerate(self.history):
            if index in superseded:
                messages.append(superseded[index])
            elif index == last:
                messages.append(message)  # the current message goes in unaltered
            else:
                if index not in self._shown:
                    self._shown[index] = self._shorten(index, message)
                messages.append(self._shown[index])
        if not self._listing:
            return Window(messages=messages)
        if self._tool is None:
            self._tool = retrieve_tool(TOOL_INTRO + self._listing_text())
        return Window(
            messages=messages,
            tools=[self._tool],
            tool_handler=self.tool_handler,
            retrievable=self._originals,
        )

    def add(self, message: Message) -> None:
        super().add(message)
        index = len(self.history) - 1
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            self._calls[call.get("id")] = (
                str(function.get("name", "")),
                str(function.get("arguments", "")),
            )
        key = (
            self._calls.get(message.get("tool_call_id")) if message.get("role") == "tool" else None
        )
        if key is not None:
            earlier = self._latest.get(key)
            if earlier is not None:
                self._superseded[earlier] = {
                    **self.history[earlier],
                    "content": SUPERSEDED.format(name=key[0]),
                }
            self._latest[key] = index

    def end_session(self) -> None:
        """A new chat starts empty, but the old one stays retrievable: its
        transcript becomes one memory whose preview shows its odd lines."""
        earlier = [m for m in self.history if m.get("role") != "system"]
        super().end_session()
        self._shown.clear()
        self._calls.clear()
        self._latest.clear()
        self._superseded.clear()
        if not earlier:
            return
        transcript = "\n".join(f"{m.get('role')}: {content_text(m)}" for m in earlier)
        self._remember(position=0, text=transcript, original=transcript, count=len(earlier))

    def tool_handler(self, name: str, args: dict[str, Any]) -> str:
        known = ", ".join(e.id for e in self.store.entries()) or "none"
        if name != RETRIEVE_TOOL:
            return f"error: unknown tool {name!r}; use {RETRIEVE_TOOL} with one of: {known}"
        memory_id = str(args.get("id", "")).strip() if isinstance(args, dict) else ""
        entry = self.store.get(memory_id)
        if entry is None:
            return f"error: no memory with id {memory_id!r}; known memory ids: {known}"
        return entry.text

    def _shorten(self, index: int, message: Message) -> Message:
        text = content_text(message)
        if message.get("role") == "system" or len(text) <= self.head + self.tail:
            return message
        end = len(text) - self.tail
        entry_id = self._remember(position=index + 1, text=text[self.head : end], original=text)
        marker = MARKER.format(n=end - self.head, id=entry_id)
        return {**message, "content": text[: self.head] + marker + text[end:]}

    def _listing_text(self) -> str:
        shown = self._listing[-self.max_listed :] if self.max_listed > 0 else []
        hidden = len(self._listing) - len(shown)
        if not hidden:
            return "".join(shown)
        return OLDER.format(n=hidden, first="m1", last=f"m{hidden}") + "".join(shown)

    def _remember(self, *, position: int, text: str, original: str, count: int = 1) -> str:
        entry = self.store.put(position=position, text=text, original=original, message_count=count)
        self._listing.append(
            LISTING_LINE.format(
                id=entry.id,
                position=entry.position,
                count=entry.message_count,
                preview=entry.preview,
            )
        )
        self._tool = None
        self._originals.append(original)
        return entry.id


def retrieve_tool(description: str) -> dict[str, Any]:
    """The ``retrieve_memory`` tool in OpenAI function-calling format."""
    return {
        "type": "function",
        "function": {
            "name": RETRIEVE_TOOL,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "string", "description": "memory id, e.g. m1"}},
                "required": ["id"],
            },
        },
    }
