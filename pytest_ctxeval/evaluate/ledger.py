"""The fact ledger: the state of every needle, constraint and evidence fact
after each request of a session, compactly.

The states are fact survival's (``verbatim``, ``transformed``, ``in_store``,
``gone``; see evaluate.survival) plus ``mutated``: a needle that declares a
``slot`` ("port") and a ``value`` ("5432") is mutated when the request shows
the slot followed by another value ("port 8080") and not its own value, the
way a summary rewrites a number.  Unlike fact survival at a probe, every
message of the request counts, the last one too: after a request the whole
window is what the model saw (a fact planted in the
current user message is ``verbatim`` at that request).  A fact spread over
two messages is not verbatim: each piece is looked for in one text, and so
are a slot and the value after it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..llm.request_text import message_texts, tools_texts
from ..llm.text import contains_phrase, normalise, normalised
from ..messages import Message, identical_prefix_length, kept_after_new_first
from ..scenario.build import Fact
from ..strategies.base import Window
from .prefix_unions import Found, PrefixUnions, Unchanged

STATES = ("verbatim", "transformed", "mutated", "in_store", "gone")
# What a text shows of a fact with a slot, beside its pieces (i >= 0) and its
# answers (-1 - j): the slot followed by a value, or the fact's own value.
_SLOT_SHOWN = 1 << 20
_VALUE_SHOWN = _SLOT_SHOWN + 1
# A value is a run of word characters with inner dots, colons, slashes or dashes.
_VALUE = r"([\w][\w.:/-]*\w|\w)"
# Words that may stand between a slot and its value ("port is 5432", "port: 5432").
_LINK = r"(?:\s*(?:(?:is|was|to|of|at|on|now)(?!\w)|[=:])\s*)*"


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
    # What each message object holds, by id (the object kept, so the id
    # stays its own): consecutive windows share their message objects, so a
    # session's ledger reads each message once, not once per request.
    _held: dict[int, tuple[Any, frozenset[tuple[str, int]]]] = field(
        default_factory=dict, repr=False
    )
    _plan: _Plan | None = field(default=None, repr=False)
    _window: _WindowFacts = field(default_factory=lambda: _WindowFacts(), repr=False)
    # (requests, runs, compactions) as of that many requests (as_of_now).
    _copy: tuple[int, dict[str, list[list[str | int]]], list[int]] | None = field(
        default=None, repr=False
    )

    def observe(
        self, window: Window, *, compacted: bool = False, unchanged: Unchanged | None = None
    ) -> dict[str, str]:
        """The facts' states after a request with ``window``; ``unchanged``:
        how much of it is the previous window's, when the caller knows (else
        the ledger compares the two)."""
        self.requests += 1
        if compacted:
            self.compactions.append(self.requests)
        plan = self._plan
        if plan is None or plan.facts != self.facts:
            plan = self._plan = _Plan.of(self.facts, self.coincidental)
            self._window = _WindowFacts()  # what was found, was found for other facts
            self._held.clear()
        key = plan.key
        shown = self._window.shown(window.messages, unchanged, lambda m: self._found_in(m, key))
        seen = set(shown)
        for text in tools_texts(window.tools):
            seen.update(_found(text, key))
        stored = self._window.stored(window.retrievable, unchanged, lambda t: _found(t, key))
        states = _states(plan, seen, stored)
        for fact_id, state in states.items():
            runs = self.runs.setdefault(fact_id, [])
            if runs and runs[-1][0] == state:
                runs[-1][1] = int(runs[-1][1]) + 1
            else:
                runs.append([state, 1])
        return states

    def _found_in(self, message: Message, key: _FactKey) -> Found:
        """What ``message`` holds of the facts, read once per message object."""
        held = self._held.get(id(message))
        if held is None or held[0] is not message:
            found = [_found(t, key) for t in message_texts(message)]
            held = self._held[id(message)] = (message, frozenset().union(*found))
        return held[1]

    def as_of_now(self) -> tuple[dict[str, list[list[str | int]]], list[int]]:
        """A copy of the runs and the compaction requests, made once per state
        of the ledger: every probe of a session records the same ledger, and
        records only read it."""
        if self._copy is None or self._copy[0] != self.requests:
            runs = {fact: [list(run) for run in runs] for fact, runs in self.runs.items()}
            self._copy = (self.requests, runs, list(self.compactions))
        return self._copy[1], self._copy[2]

    def count(self, state: str) -> int:
        """How many facts were in ``state`` after at least one request."""
        return sum(1 for runs in self.runs.values() if any(r[0] == state for r in runs))


def put_ledger(record: Any, ledger: FactLedger) -> None:
    """The ledger's record fields: ``fact_ledger`` (per fact, runs of
    [state, requests]) and ``compaction_requests``; extras, so records of
    scenarios without facts are unchanged."""
    record.fact_ledger, record.compaction_requests = ledger.as_of_now()


def fact_states(
    facts: list[Fact], window: Window, coincidental: dict[str, frozenset[str]] | None = None
) -> dict[str, str]:
    """Each fact's state in ``window``, every message of it counted.

    Fact survival's rules (see evaluate.survival), worked out once per
    distinct text and fact list: a session's requests share nearly all their
    messages, so a ledger over N requests costs about one pass over the
    session's texts, not N passes over growing windows."""
    plan = _Plan.of(facts, coincidental or {})
    seen: set[tuple[str, int]] = set()
    texts = _texts(window)
    for text in texts:
        seen.update(_found(text, plan.key))
    stored = frozenset().union(*(_found(text, plan.key) for text in window.retrievable))
    return _states(plan, seen, stored)


def _texts(window: Window) -> list[str]:
    return [t for m in window.messages for t in message_texts(m)] + tools_texts(window.tools)


class _FactKey(tuple):  # type: ignore[type-arg]
    """The facts as ``_found``'s cache key, hashed once: a session asks it
    for every text of every request, and a tuple of facts hashes each fact's
    fields on every look-up."""

    _hash: int

    def __new__(cls, facts: list[Fact]) -> _FactKey:
        key = super().__new__(cls, facts)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True)
class _FactRule:
    """What ``_found`` marks for one fact: its pieces, and its answers that
    count (not the scenario's coincidental ones)."""

    fact: Fact
    pieces: frozenset[tuple[str, int]]
    answers: frozenset[tuple[str, int]]
    slot_shown: Found  # empty for a fact without a slot
    value_shown: Found


@dataclass(frozen=True)
class _Plan:
    """The facts of a ledger, read once: its cache key and each fact's rule."""

    facts: list[Fact]
    key: _FactKey
    rules: tuple[_FactRule, ...]

    @classmethod
    def of(cls, facts: list[Fact], coincidental: dict[str, frozenset[str]]) -> _Plan:
        rules = []
        for fact in facts:
            ignored = coincidental.get(fact.id, frozenset())
            pieces = frozenset((fact.id, i) for i in range(len(fact.pieces())))
            answers = frozenset(
                (fact.id, -1 - i) for i, a in enumerate(fact.answers) if a not in ignored
            )
            slotted = fact.slot is not None and fact.value is not None
            rules.append(
                _FactRule(
                    fact,
                    pieces,
                    answers,
                    frozenset({(fact.id, _SLOT_SHOWN)} if slotted else ()),
                    frozenset({(fact.id, _VALUE_SHOWN)}),
                )
            )
        return cls(list(facts), _FactKey(facts), tuple(rules))


def _states(plan: _Plan, seen: set[tuple[str, int]], stored: Found) -> dict[str, str]:
    either = seen | stored if stored else seen
    states: dict[str, str] = {}
    for rule in plan.rules:
        fact = rule.fact
        if rule.pieces <= seen:
            states[fact.id] = "verbatim"
        elif not rule.answers.isdisjoint(seen):
            states[fact.id] = "transformed"
        elif rule.slot_shown and rule.slot_shown <= seen and rule.value_shown.isdisjoint(seen):
            # Another value after the slot, and its own value shown nowhere.
            states[fact.id] = "mutated"
        elif rule.pieces <= either or not rule.answers.isdisjoint(stored):
            states[fact.id] = "in_store"
        else:
            states[fact.id] = "gone"
    return states


class _WindowFacts:
    """What the last window showed and stored, kept as windows follow each
    other (see prefix_unions): its first message apart, since a strategy may
    rewrite that alone every request (a clock in the system prompt)."""

    def __init__(self) -> None:
        self._messages: list[Message] = []  # the last window's, copied
        self._first: Found = frozenset()
        self._rest: PrefixUnions[Message] = PrefixUnions(start=1)
        self._texts: list[str] = []  # the last window's retrievable texts, copied
        self._store: PrefixUnions[str] = PrefixUnions()

    def shown(
        self,
        messages: list[Message],
        unchanged: Unchanged | None,
        found: Callable[[Message], Found],
    ) -> Found:
        previous = self._messages
        if unchanged is None:
            prefix, after_first = identical_prefix_length(previous, messages), None
        else:
            prefix, after_first = unchanged.prefix, unchanged.after_first
        prefix = min(prefix, len(previous), len(messages))
        if not prefix and messages:
            self._first = found(messages[0])
        kept = kept_after_new_first(previous, messages, prefix, after_first)
        if kept:  # a new first message before the previous window's others
            previous[0] = messages[0]
        else:
            kept = prefix
        rest = self._rest.union(messages, kept - 1 if kept else 0, found)
        del previous[kept:]  # in place: a session's list grows, not copied
        previous.extend(messages[kept:])
        return self._first | rest if messages else frozenset()

    def stored(
        self, texts: list[str], unchanged: Unchanged | None, found: Callable[[str], Found]
    ) -> Found:
        shared = None if unchanged is None else unchanged.retrievable
        if shared is None:
            shared = identical_prefix_length(self._texts, texts)
        shared = min(shared, len(self._texts), len(texts))
        self._texts[shared:] = texts[shared:]
        return self._store.union(texts, shared, found)


@lru_cache(maxsize=20_000)
def _found(text: str, facts: tuple[Fact, ...]) -> frozenset[tuple[str, int]]:
    """(fact id, i) for each piece i >= 0 of a fact that ``text`` holds,
    (fact id, -1 - j) for each of its answers j that it holds as whole words,
    and for a fact with a slot, whether it shows its own value (_VALUE_SHOWN)
    or else the slot followed by a value (_SLOT_SHOWN)."""
    visible = normalise(text)
    found = set()
    for fact in facts:
        for i, piece in enumerate(fact.pieces()):
            if normalised(piece) in visible:
                found.add((fact.id, i))
        for j, answer in enumerate(fact.answers):
            if contains_phrase(visible, answer):  # a substring test first, then whole words
                found.add((fact.id, -1 - j))
        if fact.slot is not None and fact.value is not None:
            if contains_phrase(visible, fact.value):
                found.add((fact.id, _VALUE_SHOWN))
            elif _pattern(fact.slot).search(visible):
                found.add((fact.id, _SLOT_SHOWN))
    return frozenset(found)


@lru_cache(maxsize=256)
def _pattern(slot: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(normalise(slot)) + r"(?!\w)" + _LINK + r"\s*" + _VALUE)


def first_change(runs: list[list[str | int]], state: str) -> int | None:
    """The 1-based request at which the fact first reached ``state``."""
    at = 1
    for name, count in runs:
        if name == state:
            return at
        at += int(count)
    return None
