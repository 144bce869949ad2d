"""The typed working memory ``compaction`` keeps, and the code that merges it.

The model fills a :class:`WorkingMemory` through structured output (pydantic
model -> JSON schema -> ``response_format``).  It is trusted with judgement
(the goal, what is done, what is pending) but not with bookkeeping: sets
such as the modified files are merged here, in code, and user constraints
live in a :class:`ConstraintLedger` the model can only ever add verbatim
user sentences to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .base import Message, content_text
from .turns import sorted_json

# A user sentence that states a rule ("never use requests", "always answer in French").
CONSTRAINT = re.compile(r"\b(never|always|must|do not|don't|only|avoid|prefer)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PATH_KEYS = frozenset({"path", "file", "filename", "filepath", "file_path", "target", "dest"})
# Latest milestones and discoveries a working memory keeps (user rules live in
# the ledger and never drop; modified files are a set read from tool calls).
MEMORY_ITEMS = 100


class WorkingMemory(BaseModel):
    """What an agent must still know after older turns are compacted away."""

    model_config = ConfigDict(extra="forbid", title="working_memory")

    # The descriptions go to the model with the schema; the mock model also
    # matches their words against the conversation, so they name the cue words.
    goal: str = Field(
        default="",
        description="The overall goal: what the person wants or needs to build, fix or achieve.",
    )
    completed_milestones: list[str] = Field(
        default_factory=list,
        description="Milestones completed so far: what is done, finished, fixed, added, "
        "created, written, merged or passed.",
    )
    pending_tasks: list[str] = Field(
        default_factory=list,
        description="Tasks still pending: todo items, what remains, is left or still needs doing.",
    )
    active_user_constraints: list[str] = Field(
        default_factory=list,
        description="Rules that still hold, quoted exactly: never, always, must, only, avoid, "
        "prefer, don't.",
    )
    modified_files: list[str] = Field(
        default_factory=list,
        description="Files, paths or named entities that were created, modified or deleted.",
    )
    key_discoveries: list[str] = Field(
        default_factory=list,
        description="Key technical discoveries: causes, errors, versions, ports, identifiers and "
        "values learned.",
    )


def strict_schema() -> dict[str, Any]:
    """The JSON schema OpenAI's strict structured output accepts: every field
    required, no defaults, no extra keys."""
    schema = WorkingMemory.model_json_schema()
    for prop in schema["properties"].values():
        prop.pop("default", None)
        prop.pop("title", None)
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    return schema


@dataclass(frozen=True)
class ConstraintLedger:
    """User constraints, verbatim and append-only: compaction cannot edit them."""

    entries: tuple[str, ...] = ()

    def with_user_rules(self, messages: list[Message]) -> ConstraintLedger:
        """Add every rule-like sentence the user said in ``messages``."""
        found = [
            sentence.strip()
            for m in messages
            if m.get("role") == "user"
            for sentence in _SENTENCE.split(content_text(m))
            if CONSTRAINT.search(sentence)
        ]
        return self._extended(found)

    def with_proposals(self, proposals: list[str], messages: list[Message]) -> ConstraintLedger:
        """Add the model's proposed constraints only where the user said them word for
        word: a mutated rule ("port 8080" for "port 5432") never gets in."""
        said = "\n".join(content_text(m) for m in messages if m.get("role") == "user")
        return self._extended([p.strip() for p in proposals if p.strip() and p.strip() in said])

    def _extended(self, found: list[str]) -> ConstraintLedger:
        new = [f for f in dict.fromkeys(found) if f and f not in self.entries]
        return ConstraintLedger(self.entries + tuple(new)) if new else self


def merge(old: WorkingMemory, new: WorkingMemory, touched: list[str]) -> WorkingMemory:
    """The next memory: the model's judgement, the bookkeeping done in code."""
    # Bounded as a model's own rewrite would be: the latest entries stay, so the
    # memory, and each compaction request, stops growing with the session.
    milestones = _union(old.completed_milestones, new.completed_milestones)[-MEMORY_ITEMS:]
    return WorkingMemory(
        goal=new.goal.strip() or old.goal,
        completed_milestones=milestones,
        pending_tasks=[t for t in _union(new.pending_tasks) if t not in milestones],
        active_user_constraints=[],  # rendered from the ledger, never from the model
        modified_files=sorted(set(old.modified_files) | set(new.modified_files) | set(touched)),
        key_discoveries=_union(old.key_discoveries, new.key_discoveries)[-MEMORY_ITEMS:],
    )


def touched_paths(messages: list[Message]) -> list[str]:
    """Paths named in tool-call arguments: what the agent's tools touched, read by code."""
    found: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            try:
                args = json.loads((call.get("function") or {}).get("arguments") or "{}")
            except ValueError:
                continue
            if isinstance(args, dict):
                found.extend(
                    str(v)
                    for k, v in args.items()
                    if k.lower() in _PATH_KEYS and isinstance(v, str)
                )
    return found


def render_json(memory: WorkingMemory) -> str:
    """Cache-friendly: sorted keys, so equal memories are equal bytes.  The
    constraints are left out: the ledger is shown on its own, verbatim."""
    return sorted_json(memory.model_dump(exclude={"active_user_constraints"}))


def render_markdown(memory: WorkingMemory, ledger: ConstraintLedger) -> str:
    sections = [("Goal", [memory.goal] if memory.goal else [])]
    sections += [
        ("Active user constraints (verbatim)", list(ledger.entries)),
        ("Completed milestones", memory.completed_milestones),
        ("Pending tasks", memory.pending_tasks),
        ("Modified files", memory.modified_files),
        ("Key discoveries", memory.key_discoveries),
    ]
    return "\n".join(
        f"### {title}\n" + "\n".join(f"- {item}" for item in items)
        for title, items in sections
        if items
    )


def _union(*lists: list[str]) -> list[str]:
    return list(dict.fromkeys(item.strip() for items in lists for item in items if item.strip()))
