"""``headtail``: keep the head and tail of bulky messages, store the middle;
over a token budget, move whole middle turns to the store as well.

The model sees where each middle went (a marker with a memory id) and can get
it back with the ``retrieve_memory`` tool; a listing shows every memory with
its position, message count and a preview.  With ``budget_tokens``, the window
keeps the first ``head_turns`` turns and as many recent turns as fit; each
turn in between (a user message with the assistant's replies and tool
messages) goes to the store whole, as one memory.  Repeated tool calls and
repeated messages are left out (see ``hygiene``).

Where the listing goes (``listing``): ``message``, the default, keeps the
tool definition byte-identical on every request and sends the listing as a
message just before the current exchange, where a provider's prompt cache
loses least; ``tool`` writes it into the tool's description, which then
changes (and breaks the cached prefix) whenever a memory is added.
"""

from __future__ import annotations

import bisect
from typing import Any

from .base import (
    REQUEST_OVERHEAD_TOKENS,
    Message,
    Window,
    content_text,
    current_exchange_start,
    messages_tokens,
    system_length,
)
from .headtail_listing import (
    INDEX_INTRO,
    LISTING_LINE,
    MARKER,
    OLDER,
    RETRIEVE_TOOL,
    STABLE_TOOL_INTRO,
    TOOL_INTRO,
    MemoryListing,
    retrieve_tool,
)
from .hygiene import Hygiene
from .memory_store import MemoryStore
from .registration import register_strategy
from .turns import TracksUserTurns, require_at_least, transcript
from .unchanged_prefix import ListsAGrowingStore, tracks_unchanged_prefix

# Names other modules import from here.
__all__ = [
    "INDEX_INTRO",
    "LISTING_LINE",
    "MARKER",
    "OLDER",
    "RETRIEVE_TOOL",
    "STABLE_TOOL_INTRO",
    "TOOL_INTRO",
    "HeadTailStrategy",
    "retrieve_tool",
]
LISTINGS = ("tool", "message")


@register_strategy("headtail")
@tracks_unchanged_prefix
class HeadTailStrategy(ListsAGrowingStore, TracksUserTurns, MemoryListing):
    name = "headtail"
    description = (
        "Keep head and tail of each bulky message (the middle goes to retrievable memory); "
        "over a budget, whole middle turns go there too."
    )

    def __init__(
        self,
        head: int = 100,
        tail: int = 100,
        max_listed: int = 40,
        budget_tokens: int | None = None,
        head_turns: int = 1,
        listing: str = "message",
    ) -> None:
        super().__init__()
        require_at_least("headtail", 0, head=head, tail=tail, head_turns=head_turns)
        if listing not in LISTINGS:
            raise ValueError(
                f"headtail: listing must be one of {', '.join(LISTINGS)}, got {listing!r}"
            )
        self.head = head
        self.tail = tail
        # The listing shows the newest memories only, so it stays bounded in a
        # 1,000-turn session.
        self.max_listed = max_listed
        self.budget_tokens = budget_tokens
        self.head_turns = head_turns
        self.listing = listing
        self.store = MemoryStore()
        # History never changes, so each message is shortened (and stored) once,
        # and its tokens counted once: window() runs on every turn.
        self._shown: dict[int, Message] = {}  # message index -> as the window shows it
        self._tokens: dict[int, int] = {}  # message index -> its tokens as shown
        self._listing: list[str] = []  # per memory: its line in the listing
        # [the retrieve tool]; None: to build again (``listing="tool"``: its
        # description lists the memories).  The same list while the tool is
        # unchanged: replay then knows the tools without reading them again.
        self._tools: list[dict[str, Any]] | None = None
        self._hygiene = Hygiene()
        self._originals: list[str] = []
        # Evicted turns, by history index: [_system_end, _head_gone) of the head
        # and [_head_end, _middle_gone) after it.  Turns leave in order, so two
        # bounds say it all.
        self._head_gone = 0
        self._middle_gone = 0
        # Tokens the listing message may take in this window; None: no limit.
        self._index_room: int | None = None
        # The last window's messages and what they were built from (see
        # _kept_messages): a new window only adds what arrived since.
        self._built: tuple[tuple[int, ...], int, list[Message], list[int], int] | None = None
        # Messages revised since the last window: shown anew, like hygiene's.
        self._revised: list[int] = []
        # How many leading messages of the last window are the very objects
        # of the window before (None: not known), so that replay looks at the
        # new part only: a long session costs its new messages, not turns x
        # messages.  The kept list's share, and where the listing message went.
        self.unchanged_prefix: int | None = None
        self._kept_prefix: int | None = None
        self._index_at: int | None = None

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "head": self.head,
            "tail": self.tail,
            "max_listed": self.max_listed,
        }
        # Eviction and the listing's place only when they differ from the
        # default: records of runs without them read as before.
        if self.budget_tokens is not None:
            params.update(budget_tokens=self.budget_tokens, head_turns=self.head_turns)
        if self.listing != "message":
            params["listing"] = self.listing
        return params

    def add(self, message: Message) -> None:
        super().add(message)
        self._hygiene.add(len(self.history) - 1, message)

    def revise(self, index: int, message: Message) -> None:
        super().revise(index, message)
        self._shown.pop(index, None)  # shortened again from the new text
        self._tokens.pop(index, None)
        self._revised.append(index)

    def window(self) -> Window:
        return self._window(lent=False)

    def lent_window(self) -> Window:
        """``window()``, whose message list may be this strategy's own: valid
        until the next call, which changes it in place (see lent_window_of)."""
        return self._window(lent=True)

    def _window(self, *, lent: bool) -> Window:
        last = len(self.history) - 1
        if self.budget_tokens is not None:
            self._evict_over_budget(last)
        kept = self._kept_messages(last)
        index_at = None
        if self._listing and self.listing == "message":
            messages, index_at = self._with_index(list(kept))
        else:
            # A copy costs the whole window on every call: turns x messages.
            messages = kept if lent else list(kept)
        self._note_prefix(index_at)
        retrievable = self._retrievable(self._originals, lent=lent)
        if not self._listing:
            return Window(messages=messages, retrievable=retrievable)
        if self._tools is None:
            stable = self.listing == "message"
            self._tools = [
                retrieve_tool(STABLE_TOOL_INTRO if stable else TOOL_INTRO + self._listed())
            ]
        return Window(
            messages=messages,
            tools=self._tools if lent else list(self._tools),
            tool_handler=self.tool_handler,
            retrievable=retrievable,
        )

    def _note_prefix(self, index_at: int | None) -> None:
        """``unchanged_prefix`` of the window just built: the kept list's
        unchanged share, cut where the listing message stands in this window
        or stood in the one before (a listing is a new message every time)."""
        prefix = self._kept_prefix
        if prefix is not None:
            for at in (index_at, self._index_at):
                if at is not None:
                    prefix = min(prefix, at)
        self.unchanged_prefix = prefix
        self._index_at = index_at

    def end_session(self) -> None:
        """A new chat starts empty, but the old one stays retrievable: its
        transcript becomes one memory whose preview shows its odd lines."""
        earlier = [m for m in self.history if m.get("role") != "system"]
        super().end_session()
        self._built = None
        self._revised.clear()
        self._shown.clear()
        self._tokens.clear()
        self._hygiene = Hygiene()
        self._head_gone = self._middle_gone = 0
        if not earlier:
            return
        text = "\n".join(f"{m.get('role')}: {content_text(m)}" for m in earlier)
        self._remember(position=0, text=text, original=text, count=len(earlier))

    # --- the window's messages ------------------------------------------------

    def _kept_messages(self, last: int) -> list[Message]:
        """The messages of ``_kept``.  When the ranges are as they were, the
        last window's messages are kept: the earlier messages hygiene has
        changed since are shown anew, and what arrived since is added (the
        previous current message is shown as any other now).  A window then
        costs its new messages, not the session."""
        ranges = self._ranges(last)
        tail_begin = ranges[2][0]
        key = (*ranges[0], *ranges[1], tail_begin)  # all but the end, which is last + 1
        touched = self._hygiene.touched
        built = self._built
        revised, self._revised = self._revised, []
        dropped = None
        if built is not None and built[0] == key and tail_begin <= built[1] <= last:
            _, previous_last, messages, indexes, seen = built
            dropped = messages.pop()  # previous_last, shown again below
            del indexes[-1]
            self._kept_prefix = len(messages)
            for index in [*touched[seen:], *revised]:
                at = self._show_again(index, last, messages, indexes)
                if at is not None:
                    self._kept_prefix = min(self._kept_prefix, at)
            ranges = [(previous_last, last + 1)]
        else:
            messages, indexes = [], []
            self._kept_prefix = None
        for index, shown in self._shown_in(ranges, last):
            indexes.append(index)
            messages.append(shown)
        at = self._kept_prefix
        if at is not None and at < len(messages) and messages[at] is dropped:
            self._kept_prefix = at + 1  # shown as it was sent: still the same object
        self._built = (key, last, messages, indexes, len(touched))
        return messages  # the kept list itself: window() copies it, lent_window() need not

    def _show_again(
        self, index: int, last: int, messages: list[Message], indexes: list[int]
    ) -> int | None:
        """Update the entry of ``index`` (if the window has it) to how it is
        shown now (hygiene only leaves out or trims); where it was, if it was."""
        at = bisect.bisect_left(indexes, index)
        if at == len(indexes) or indexes[at] != index:
            return None
        shown = self._message(index, last)
        if shown is None:
            del messages[at], indexes[at]
        elif shown is not messages[at]:
            messages[at] = shown
        else:
            return None
        return at

    def _kept(self, last: int) -> list[tuple[int, Message]]:
        """(index, message as shown) for every message the window keeps."""
        return self._shown_in(self._ranges(last), last)

    def _ranges(self, last: int) -> list[tuple[int, int]]:
        """The history ranges the window keeps: system prompt, head, tail."""
        system_end, head_end = self._bounds()
        return [
            (0, system_end),
            (self._head_gone, head_end),
            (max(self._middle_gone, head_end), last + 1),
        ]

    def _shown_in(self, ranges: list[tuple[int, int]], last: int) -> list[tuple[int, Message]]:
        kept: list[tuple[int, Message]] = []
        for begin, end in ranges:
            for index in range(begin, min(end, last + 1)):
                shown = self._message(index, last)
                if shown is not None:
                    kept.append((index, shown))
        return kept

    def _message(self, index: int, last: int) -> Message | None:
        message = self.history[index]
        if index == last:
            return message  # the current message goes in unaltered
        after_hygiene = self._hygiene.shown(index, message)
        if after_hygiene is not message:
            return after_hygiene
        if index not in self._shown:
            self._shown[index] = self._shorten(index, message)
        return self._shown[index]

    def _shorten(self, index: int, message: Message) -> Message:
        text = content_text(message)
        if message.get("role") == "system" or len(text) <= self.head + self.tail:
            return message
        end = len(text) - self.tail
        entry_id = self._remember(position=index + 1, text=text[self.head : end], original=text)
        marker = MARKER.format(n=end - self.head, id=entry_id)
        return {**message, "content": text[: self.head] + marker + text[end:]}

    # --- eviction of whole turns ------------------------------------------------

    def _bounds(self) -> tuple[int, int]:
        """Where the system prompt ends and where the head turns end."""
        system_end = system_length(self.history)
        self._head_gone = max(self._head_gone, system_end)
        starts = self._user_at
        head_end = starts[self.head_turns] if len(starts) > self.head_turns else len(self.history)
        return system_end, head_end

    def _evict_over_budget(self, last: int) -> None:
        """Move whole turns to the store until the window fits the budget: middle
        turns first (oldest first), then head turns; the current exchange stays."""
        assert self.budget_tokens is not None
        self._index_room = None
        _, head_end = self._bounds()
        # Shortening stores middles (and grows the listing): count messages first.
        total = REQUEST_OVERHEAD_TOKENS + sum(self._cost(i, m) for i, m in self._kept(last))
        # Turns come before the listing: an evicted turn adds a listing line
        # about as long as a short turn, so counting the whole listing would
        # evict every turn for it.  Only its newest line is sure of a place;
        # the listing gets the room the kept turns leave.
        listing = self._listing_tokens()
        total += listing
        while total > self.budget_tokens:
            turn = self._next_turn(head_end)
            if turn is None:
                break
            begin, end, in_head = turn
            total -= sum(self._cost(i, m) for i, m in self._shown_in([(begin, end)], last))
            self._remember_turn(begin, end)
            if in_head:
                self._head_gone = end
            else:
                self._middle_gone = end
            total += self._listing_tokens() - listing
            listing = self._listing_tokens()
        if self.listing == "message":
            self._index_room = max(self.budget_tokens - (total - listing), 0)

    def _next_turn(self, head_end: int) -> tuple[int, int, bool] | None:
        """The next turn to evict: [begin, end) of the history and whether it is
        a head turn; None when nothing but the current exchange is left.

        Whole middle turns go first, oldest first, then the head turns; only
        then the current turn's messages before the current exchange."""
        exchange = current_exchange_start(self.history)
        turn = self._user_at[-1] if self._user_at else 0
        turn = min(turn, exchange)
        begin = max(self._middle_gone, head_end)
        if begin < turn:
            return begin, self._next_start(begin, turn), False
        if self._head_gone < min(head_end, turn):
            limit = min(head_end, turn)
            return self._head_gone, self._next_start(self._head_gone, limit), True
        if turn >= head_end and begin < exchange:
            return begin, exchange, False
        if turn < head_end and self._head_gone < exchange:
            return self._head_gone, exchange, True
        return None

    def _next_start(self, index: int, limit: int) -> int:
        """The first turn start after ``index``, at most ``limit``."""
        following = bisect.bisect_right(self._user_at, index)
        return min(self._user_at[following], limit) if following < len(self._user_at) else limit

    def _remember_turn(self, begin: int, end: int) -> None:
        messages = self.history[begin:end]
        text = transcript(messages)
        if text:
            self._remember(position=begin + 1, text=text, original=text, count=end - begin)

    def _cost(self, index: int, message: Message) -> int:
        if index not in self._tokens or index == len(self.history) - 1:
            cost = messages_tokens([message], self.count_tokens) - REQUEST_OVERHEAD_TOKENS
            if index == len(self.history) - 1:
                return cost  # the current message may be shown differently later
            self._tokens[index] = cost
        return self._tokens[index]
