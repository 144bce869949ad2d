"""``compaction``: every N turns, distil older turns into a typed working memory.

In the manner of Claude Code's ``/compact`` and the OpenAI Agents SDK
session-summary pattern: the turns before the last ``keep_turns`` are
distilled, every ``every_turns`` turns, into a six-field record (goal,
completed milestones, pending tasks, active user constraints, modified
files, key discoveries) that the model fills through structured output.
The model does not get the last word on everything: user constraints live in
an append-only ledger of verbatim user sentences, and sets such as the
modified files are merged in code (see ``working_memory``).

``compaction-cached`` is the same with a prompt-cache-aligned layout: the
system prompt stays byte-identical (static prefix first), the ledger and the
memory follow as their own messages with JSON in sorted keys, and the raw
turns come last.  Plain ``compaction`` rebuilds the system prompt with the
memory in it, as many agent loops do, so every compaction invalidates the
provider's prompt cache from the first token.
"""

from __future__ import annotations

from typing import Any

from .base import Message, Window, content_text, split_system, system_length
from .registration import register_strategy
from .turns import (
    TracksUserTurns,
    check_prompt_version,
    fit_budget,
    require_at_least,
    trimmed_transcript,
    user_starts,
)
from .working_memory import (
    ConstraintLedger,
    WorkingMemory,
    merge,
    render_json,
    render_markdown,
    strict_schema,
    touched_paths,
)

COMPACTION_PROMPT_VERSION = "v1"
COMPACTION_SYSTEM_PROMPT = (
    "You compact an agent's conversation into its working memory. Fill every field of the "
    "schema from the conversation and the current working memory: the goal, completed "
    "milestones, pending tasks, the user's rules quoted word for word, the files or entities "
    "changed, and the key technical discoveries. Copy identifiers and numbers exactly."
)
# Starts with "Compress", as the mock model expects of a request to condense (the
# structured output it is sent with decides the shape of the answer).
COMPACTION_REQUEST = "Compress the conversation below into the working memory."
MEMORY_HEADER = "Working memory ({turns} turns compacted):\n"
LEDGER_HEADER = "User constraints (verbatim, append-only):\n"
TOOL_EXCERPT_CHARS = 2000
RECORDED_RULES = "Rules on record (read-only, kept by the harness):\n"


@register_strategy("compaction")
class CompactionStrategy(TracksUserTurns):
    name = "compaction"
    description = "Every N turns, older turns become a typed working memory; recent turns stay raw."

    def __init__(
        self,
        every_turns: int = 10,
        keep_turns: int = 3,
        trim_tokens: int = 8000,
        cache_aligned: bool = False,
        budget_tokens: int | None = None,
        prompt_version: str = COMPACTION_PROMPT_VERSION,
    ) -> None:
        super().__init__()
        check_prompt_version(self.name, prompt_version, COMPACTION_PROMPT_VERSION)
        require_at_least(
            self.name, 1, every_turns=every_turns, keep_turns=keep_turns, trim_tokens=trim_tokens
        )
        self.every_turns = every_turns
        self.keep_turns = keep_turns
        self.trim_tokens = trim_tokens
        self.cache_aligned = cache_aligned
        self.budget_tokens = budget_tokens
        self.memory: WorkingMemory | None = None
        self.ledger = ConstraintLedger()
        self.compacted = 0  # messages after the system prompt the memory covers
        self.turns_compacted = 0  # in the current chat
        self.total_turns_compacted = 0  # across chats: what the memory covers
        self.compactions = 0

    def params(self) -> dict[str, Any]:
        return {
            "every_turns": self.every_turns,
            "keep_turns": self.keep_turns,
            "trim_tokens": self.trim_tokens,
            "cache_aligned": self.cache_aligned,
            "budget_tokens": self.budget_tokens,
            "prompt_version": COMPACTION_PROMPT_VERSION,
        }

    def window(self) -> Window:
        # Slices of the history, never a copy of all of it: a turn costs what
        # the window holds, not what the session has seen.
        offset = system_length(self.history)
        system = self.history[:offset]
        old_enough = self.turn_count() - self.keep_turns  # turns before the kept ones
        if old_enough - self.turns_compacted >= self.every_turns:
            cut = self.turn_start(old_enough, offset)  # a turn start: no pair is split
            self._compact(self.history[offset + self.compacted : offset + cut])
            self.compacted = cut
            self.total_turns_compacted += old_enough - self.turns_compacted
            self.turns_compacted = old_enough
        notes = self._notes()
        raw = self.history[offset + self.compacted :]
        # Fit the budget with the memory as its own messages (dropped last), then
        # fold what survived into the system prompt for the plain layout.
        messages = fit_budget(
            system + notes + raw, self.budget_tokens, self.count_tokens, len(notes)
        )
        if not self.cache_aligned:
            kept = [m for m in messages if any(m is note for note in notes)]
            others = [m for m in messages[len(system) :] if not any(m is note for note in kept)]
            messages = _folded(system, kept) + others
        return Window(messages=messages)

    def end_session(self) -> None:
        """At the end of a chat, what is not yet compacted is compacted; the memory
        and the ledger carry into the next chat as its long-term memory."""
        rest = split_system(self.history)[1]
        left = rest[self.compacted :]
        if user_starts(left):
            self._compact(left)
            self.total_turns_compacted += len(user_starts(left))
        self.compacted = self.turns_compacted = 0
        super().end_session()

    def _compact(self, messages: list[Message]) -> None:
        if self.ctx is None or self.ctx.complete_json is None:
            raise RuntimeError(
                f"{self.name} needs a model with structured output: the harness passes "
                "complete_json through setup(StrategyContext)"
            )
        old = self.memory or WorkingMemory()
        # Rules the user stated go in before the model speaks: it cannot drop them.
        self.ledger = self.ledger.with_user_rules(messages)
        request = [
            {"role": "system", "content": COMPACTION_SYSTEM_PROMPT},
            {"role": "user", "content": self._request_text(old, messages)},
        ]
        reply = self.ctx.complete_json(request, strict_schema())
        new = WorkingMemory.model_validate(reply)
        self.ledger = self.ledger.with_proposals(new.active_user_constraints, messages)
        self.memory = merge(old, new, touched_paths(messages))
        self.compactions += 1

    def _request_text(self, old: WorkingMemory, messages: list[Message]) -> str:
        parts = [COMPACTION_REQUEST]
        if self.memory is not None:
            parts.append("Current working memory:\n" + render_markdown(old, ConstraintLedger()))
        if self.ledger.entries:
            parts.append(RECORDED_RULES + "\n".join(f"- {c}" for c in self.ledger.entries))
        body = trimmed_transcript(_excerpted(messages), self.trim_tokens, self.count_tokens)
        parts.append("Conversation:\n" + body)
        return "\n\n".join(parts)

    def _header(self) -> str:
        return MEMORY_HEADER.format(turns=self.total_turns_compacted)

    def _notes(self) -> list[Message]:
        """The memory as messages: for the aligned layout the ledger (append-only,
        so it stays cached longest) before the memory in sorted-key JSON."""
        if self.memory is None:
            return []
        if not self.cache_aligned:
            memory = "## " + self._header() + render_markdown(self.memory, self.ledger)
            # "user" while the budget is fitted (a system message would be pinned).
            return [{"role": "user", "content": memory}]
        notes: list[Message] = []
        if self.ledger.entries:
            ledger = LEDGER_HEADER + "\n".join(f"- {c}" for c in self.ledger.entries)
            notes.append({"role": "user", "content": ledger})
        notes.append({"role": "user", "content": self._header() + render_json(self.memory)})
        return notes


def _excerpted(messages: list[Message]) -> list[Message]:
    """Tool outputs cut to their first characters before the transcript is trimmed:
    bulk must not push the user's own words (goal, rules) out of the distiller's input."""
    out = []
    for message in messages:
        text = content_text(message)
        if message.get("role") == "tool" and len(text) > TOOL_EXCERPT_CHARS:
            omitted = len(text) - TOOL_EXCERPT_CHARS
            text = text[:TOOL_EXCERPT_CHARS] + f"\n[… {omitted} more characters of this output …]"
            message = {**message, "content": text}
        out.append(message)
    return out


def _folded(system: list[Message], notes: list[Message]) -> list[Message]:
    """The memory inside the (last) system message, the way many agent loops
    rebuild their instructions: simple, and a new prefix at every compaction."""
    if not notes:
        return system
    memory = "\n\n".join(str(note["content"]) for note in notes)
    if not system:
        return [{"role": "system", "content": memory}]
    last = system[-1]
    return system[:-1] + [{**last, "content": f"{last.get('content') or ''}\n\n{memory}"}]


@register_strategy("compaction-cached")
class CachedCompactionStrategy(CompactionStrategy):
    name = "compaction-cached"
    description = (
        "compaction with a prompt-cache-aligned layout: static prefix, memory, then turns."
    )

    def __init__(
        self,
        every_turns: int = 10,
        keep_turns: int = 3,
        trim_tokens: int = 8000,
        cache_aligned: bool = True,
        budget_tokens: int | None = None,
        prompt_version: str = COMPACTION_PROMPT_VERSION,
    ) -> None:
        super().__init__(
            every_turns, keep_turns, trim_tokens, cache_aligned, budget_tokens, prompt_version
        )
