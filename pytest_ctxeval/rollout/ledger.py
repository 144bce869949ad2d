"""The fact ledger: the state of every needle, constraint and evidence fact
after each request of a session, compactly.

The states are fact survival's (``verbatim``, ``transformed``, ``in_store``,
``gone``; see evaluate.survival) plus ``mutated``: a needle that declares a
``slot`` ("port") and a ``value`` ("5432") is mutated when the request shows
the slot followed by another value ("port 8080") and not its own value, the
way a summary rewrites a number.  Unlike fact survival at a probe, every
message of the request counts, the last one too: after a request the whole
window is what the model saw."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..evaluate.survival import fact_survival
from ..llm.request_text import message_texts, tools_texts
from ..llm.text import contains_phrase, normalise
from ..scenario.build import Fact
from ..strategies.base import Window

STATES = ("verbatim", "transformed", "mutated", "in_store", "gone")
# A value is a run of word characters with inner dots, colons, slashes or dashes.
_VALUE = r"([\w][\w.:/-]*\w|\w)"
# Words that may stand between a slot and its value ("port is 5432", "port: 5432").
_LINK = r"(?:\s*(?:is|was|=|:|to|of|at|on|now)\b?\s*)*"


@dataclass
class FactLedger:
    """States per request, as runs: ``{fact: [[state, requests], ...]}``."""

    facts: list[Fact]
    coincidental: dict[str, frozenset[str]] = field(default_factory=dict)
    runs: dict[str, list[list[str | int]]] = field(default_factory=dict)
    requests: int = 0
    # 1-based requests whose window the strategy built with its own model call
    # (a summary, a compaction): the events a fact is lost or mutated at.
    compactions: list[int] = field(default_factory=list)

    def observe(self, window: Window, *, compacted: bool = False) -> dict[str, str]:
        self.requests += 1
        if compacted:
            self.compactions.append(self.requests)
        states = fact_states(self.facts, window, self.coincidental)
        for fact_id, state in states.items():
            runs = self.runs.setdefault(fact_id, [])
            if runs and runs[-1][0] == state:
                runs[-1][1] = int(runs[-1][1]) + 1
            else:
                runs.append([state, 1])
        return states

    def count(self, state: str) -> int:
        """How many facts were in ``state`` after at least one request."""
        return sum(1 for runs in self.runs.values() if any(r[0] == state for r in runs))


def fact_states(
    facts: list[Fact], window: Window, coincidental: dict[str, frozenset[str]] | None = None
) -> dict[str, str]:
    # fact_survival leaves the last message out (the probe): add an empty one.
    blank = {"role": "user", "content": ""}
    seen = Window([*window.messages, blank], window.tools, retrievable=window.retrievable)
    states: dict[str, str] = dict(fact_survival(facts, seen, coincidental=coincidental))
    visible: str | None = None
    for fact in facts:
        if fact.slot is None or fact.value is None:
            continue
        if states.get(fact.id) in ("verbatim", "transformed"):
            continue
        if visible is None:
            texts = [t for m in window.messages for t in message_texts(m)]
            visible = normalise("\n".join(texts + tools_texts(window.tools)))
        if mutated_value(visible, fact.slot, fact.value) is not None:
            states[fact.id] = "mutated"
    return states


def mutated_value(visible: str, slot: str, value: str) -> str | None:
    """Another value shown after ``slot`` in the normalised text, when its own
    ``value`` is shown nowhere; None otherwise."""
    if contains_phrase(visible, value):
        return None
    found = _pattern(slot).search(visible)
    return found.group(1) if found is not None else None


@lru_cache(maxsize=256)
def _pattern(slot: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(normalise(slot)) + r"(?!\w)" + _LINK + _VALUE)


def first_change(runs: list[list[str | int]], state: str) -> int | None:
    """The 1-based request at which the fact first reached ``state``."""
    at = 1
    for name, count in runs:
        if name == state:
            return at
        at += int(count)
    return None
