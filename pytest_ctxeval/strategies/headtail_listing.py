"""headtail's memory listing: the lines that say what went to the store,
where they travel (the tool's description or a message before the current
exchange), and the ``retrieve_memory`` tool that reads a memory back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import MESSAGE_OVERHEAD_TOKENS, Message, current_exchange_start
from .memory_store import MemoryStore

RETRIEVE_TOOL = "retrieve_memory"
TOOL_INTRO = "Retrieve text that was moved out of the conversation into memory. Stored memories:"
# The tool description when the listing travels as a message: never changes.
STABLE_TOOL_INTRO = (
    "Retrieve text that was moved out of the conversation into memory, by its id "
    '(m1, m2, …). The latest "Memory index" message lists the stored memories.'
)
INDEX_INTRO = "Memory index (call retrieve_memory with an id to read one):"
# The mock model parses these two formats; change them together with it.
MARKER = '\n[… {n} chars stored as memory {id}; call retrieve_memory(id="{id}") …]\n'
# No "of N messages" total: the listing must not change between requests
# unless a memory is added, or it breaks the provider's prompt cache.
LISTING_LINE = "\nid={id} | position {position} | messages {count} | preview: {preview}"
OLDER = "\n({n} older memories, {first} to {last}, are not listed; retrieve_memory takes any id)"


class MemoryListing:
    """The store and its listing, as headtail keeps them (a mixin: headtail
    sets these attributes in its constructor)."""

    store: MemoryStore
    max_listed: int
    listing: str  # "message" or "tool"
    count_tokens: Callable[[str], int]
    _listing: list[str]  # per memory: its line in the listing
    _tools: list[dict[str, Any]] | None  # [the retrieve tool]; None: to build again
    _originals: list[str]
    _index_room: int | None  # tokens the listing message may take; None: no limit

    def tool_handler(self, name: str, args: dict[str, Any]) -> str:
        known = ", ".join(e.id for e in self.store.entries()) or "none"
        if name != RETRIEVE_TOOL:
            return f"error: unknown tool {name!r}; use {RETRIEVE_TOOL} with one of: {known}"
        memory_id = str(args.get("id", "")).strip() if isinstance(args, dict) else ""
        entry = self.store.get(memory_id)
        if entry is None:
            return f"error: no memory with id {memory_id!r}; known memory ids: {known}"
        return entry.text

    def _listed(self) -> str:
        shown = self._listing[-self.max_listed :] if self.max_listed > 0 else []
        hidden = len(self._listing) - len(shown)
        if not hidden:
            return "".join(shown)
        return OLDER.format(n=hidden, first="m1", last=f"m{hidden}") + "".join(shown)

    def _with_index(self, messages: list[Message]) -> tuple[list[Message], int | None]:
        """The listing as a message right before the current exchange, and
        where it went; under a budget, only as many of its newest lines as
        the kept messages leave room for (None: no room for any)."""
        text = INDEX_INTRO + self._listed()
        room = self._index_room
        if room is not None:
            lines = self._listing[-self.max_listed :] if self.max_listed > 0 else []
            while lines and MESSAGE_OVERHEAD_TOKENS + self.count_tokens(text) > room:
                lines = lines[1:]
                text = INDEX_INTRO + "".join(lines)
            if not lines:
                return messages, None
        start = current_exchange_start(messages)
        messages.insert(start, {"role": "user", "content": text})  # a copy of the kept list
        return messages, start

    def _listing_tokens(self) -> int:
        """The least the listing adds to the window's messages: the index with
        its newest line (tools are not counted)."""
        if self.listing != "message" or not self._listing or self.max_listed <= 0:
            return 0
        return MESSAGE_OVERHEAD_TOKENS + self.count_tokens(INDEX_INTRO + self._listing[-1])

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
        if self.listing == "tool":
            self._tools = None  # its description lists the memories
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
