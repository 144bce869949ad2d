"""``rag``: evicted turns go into a search index; the best chunks come back.

The window is the system prompt, the last ``keep_turns`` turns raw, and the
top ``k`` chunks of older turns retrieved for the current user message,
injected in timeline order with their turn numbers (so the model can tell an
old statement from a newer one).  BM25 by default; ``backend="embeddings"``
needs the ``embeddings`` extra.

Known failure: it retrieves similar-looking but stale turns, and a chunk
loses the timeline around it.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any

from .base import Message, Window, split_system, system_length
from .registration import register_strategy
from .retrieval import SearchIndex, make_index
from .turns import (
    TracksUserTurns,
    fit_budget,
    last_user_text,
    require_at_least,
    transcript,
    user_starts,
)
from .unchanged_prefix import ListsAGrowingStore, tracks_unchanged_prefix

RETRIEVED_HEADER = "Retrieved from earlier in this conversation (oldest first):"


@register_strategy("rag")
@tracks_unchanged_prefix
class RagStrategy(ListsAGrowingStore, TracksUserTurns):
    name = "rag"
    description = "Recent turns raw; older turns indexed (BM25) and the top-k chunks retrieved."

    def __init__(
        self,
        k: int = 3,
        keep_turns: int = 4,
        chunk_chars: int = 1200,
        backend: str = "bm25",
        embedding_model: str | None = None,
        budget_tokens: int | None = None,
    ) -> None:
        super().__init__()
        require_at_least("rag", 1, k=k, keep_turns=keep_turns, chunk_chars=chunk_chars)
        self.k = k
        self.keep_turns = keep_turns
        self.chunk_chars = chunk_chars
        self.backend = backend
        self.embedding_model = embedding_model
        self.budget_tokens = budget_tokens
        self.index: SearchIndex = make_index(backend, embedding_model)
        self.chunks: list[tuple[int, str]] = []  # per indexed document: (turn number, text)
        self.texts: list[str] = []  # the chunks' texts, for Window.retrievable
        self.indexed = 0  # messages after the system prompt that are in the index
        self.turn_offset = 0  # turns of earlier chats: turn numbers run on across chats
        self.last_hits: list[int] = []
        # The question and store size of the last search: a tool round's
        # request asks the same question of the same store (nothing is
        # evicted until the next user turn), so its hits are the last ones.
        self._searched: tuple[str, int] | None = None

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "k": self.k,
            "keep_turns": self.keep_turns,
            "chunk_chars": self.chunk_chars,
            "backend": self.backend,
            "budget_tokens": self.budget_tokens,
        }
        if self.embedding_model is not None:
            params["embedding_model"] = self.embedding_model
        return params

    def _copies_for_fork(self) -> dict[int, Any]:
        # (turn, text) pairs and texts: nothing in them changes.
        return {id(self.chunks): list(self.chunks), id(self.texts): list(self.texts)}

    def window(self) -> Window:
        return self._window(lent=False)

    def lent_window(self) -> Window:
        """``window()``, whose retrievable list is this strategy's store: valid
        until the next call, which adds to it (see lent_window_of)."""
        return self._window(lent=True)

    def _window(self, *, lent: bool) -> Window:
        # Positions in the history, not copies of it: a window costs the turns
        # it shows and the turns newly evicted, not the whole session.
        history, offset = self.history, system_length(self.history)
        user_at = self._user_at
        cut = user_at[-self.keep_turns] - offset if len(user_at) > self.keep_turns else 0
        self._index(history, offset, user_at, cut)
        searched = (last_user_text(history), len(self.chunks))
        if searched != self._searched:
            hits = sorted(self.index.search(searched[0], self.k)) if self.chunks else []
            self.last_hits, self._searched = hits, searched
        hits = self.last_hits
        injected: list[Message] = []
        if hits:
            blocks = [f"[turn {self.chunks[i][0]}]\n{self.chunks[i][1]}" for i in hits]
            injected = [{"role": "user", "content": "\n\n".join([RETRIEVED_HEADER, *blocks])}]
        messages = fit_budget(
            history[:offset] + injected + history[offset + cut :],
            self.budget_tokens,
            self.count_tokens,
            len(injected),
        )
        # Every indexed chunk is retrievable; fact survival looks at the visible
        # messages first, so the injected ones still count as visible.
        return Window(messages=messages, retrievable=self._retrievable(self.texts, lent=lent))

    def end_session(self) -> None:
        """Long-term memory: the whole chat goes into the index, and later chats
        retrieve from it."""
        rest = split_system(self.history)[1]
        starts = user_starts(rest)
        self._index(rest, 0, starts, len(rest))
        self.turn_offset += len(starts)
        self.indexed = 0
        super().end_session()

    def _index(self, messages: list[Message], offset: int, user_at: list[int], cut: int) -> None:
        """Add the turns evicted since the last call, each in chunks.  The
        session is ``messages`` from ``offset`` on (after the system prompt);
        ``indexed`` and ``cut`` count from there, ``user_at`` (ascending)
        from the start of ``messages``."""
        if cut <= self.indexed:
            return
        low = bisect.bisect_right(user_at, offset + self.indexed)
        high = bisect.bisect_left(user_at, offset + cut)
        bounds = [self.indexed, *(start - offset for start in user_at[low:high]), cut]
        for begin, end in itertools.pairwise(bounds):
            # 1-based (0 before the first user message of the first chat).
            turn = self.turn_offset + bisect.bisect_right(user_at, offset + begin)
            for chunk in chunks(
                transcript(messages[offset + begin : offset + end]), self.chunk_chars
            ):
                self.index.add(chunk)
                self.chunks.append((turn, chunk))
                self.texts.append(chunk)
        self.indexed = cut


def chunks(text: str, size: int) -> list[str]:
    """Line-aligned pieces of at most ``size`` characters (a longer line is cut)."""
    out: list[str] = []
    current = ""
    for line in text.splitlines():
        while len(line) > size:
            if current:
                out.append(current)
                current = ""
            out.append(line[:size])
            line = line[size:]
        if current and len(current) + 1 + len(line) > size:
            out.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        out.append(current)
    return out
