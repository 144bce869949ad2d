"""Fact survival: is each needle/constraint still in the window at the probe?

Deterministic and model-free: the cheapest regression signal.  The window is
everything the request shows the model (message content, tool-call arguments,
tool definitions such as a memory listing's previews) except the probe
question itself, its last message: a question that names the answer is not
the fact surviving.

- ``verbatim``: every piece of the fact's text is visible (case and whitespace
  aside).
- ``transformed``: not verbatim, but one of its answers is visible as whole
  words, and the session does not mention that answer anyway: an answer that
  occurs in the session with the fact's own text taken out (``15`` in
  ``12:15:03``, or a value the assistant repeated) proves nothing, so a
  restatement of the fact in other words is not counted either.
- ``in_store``: the rest is only in text a tool can retrieve.
- ``gone``: none of that.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from ..llm.request_text import message_texts, tools_texts
from ..llm.text import contains_phrase, normalise, normalise_joined
from ..results.record import Survival
from ..scenario.build import Fact
from ..strategies.base import Window


def fact_survival(
    facts: list[Fact],
    window: Window,
    *,
    coincidental: Mapping[str, Set[str]] | None = None,
) -> dict[str, Survival]:
    """The state of each fact in ``window``, the request at a probe (its last
    message, the probe question, is left out).

    ``coincidental``: per fact id, answers the session mentions even without
    the fact (``Conversation.coincidental_answers``); none when omitted."""
    seen = _seen_in(window, coincidental)
    states: dict[str, Survival] = {}
    for fact in facts:
        found = seen.states.get(id(fact))
        if found is None or found[0] is not fact:
            found = seen.states[id(fact)] = (fact, _state(fact, seen, coincidental))
        states[fact.id] = found[1]
    return states


class _Seen:
    """What one window shows, normalised, and each fact's state in it."""

    def __init__(self, coincidental: object, visible: str, stored: str) -> None:
        self.coincidental = coincidental
        self.visible = visible
        self.stored = stored
        self.states: dict[int, tuple[Fact, Survival]] = {}


# The windows read last, by what they show: the probes of one session under
# one strategy share theirs, and a scenario's items may come strategy by
# strategy or probe by probe (xdist hands them out in collection order).
_recent: dict[tuple[int, str, str], _Seen] = {}
RECENT_WINDOWS = 16


def _seen_in(window: Window, coincidental: Mapping[str, Set[str]] | None) -> _Seen:
    """The probes of a session under a strategy that shows them the same
    history read the same text: each fact is judged once for that text (the
    phrase searches are the cost; finding the text again is a hash and a
    memcmp)."""
    texts = [t for m in window.messages[:-1] for t in message_texts(m)]
    visible = normalise_joined(texts + tools_texts(window.tools))
    stored = normalise_joined(window.retrievable)
    key = (id(coincidental), visible, stored)
    seen = _recent.get(key)
    if seen is not None and seen.coincidental is coincidental:
        return seen
    if len(_recent) >= RECENT_WINDOWS:
        del _recent[next(iter(_recent))]  # the oldest
    seen = _recent[key] = _Seen(coincidental, visible, stored)
    return seen


def _state(fact: Fact, seen: _Seen, coincidental: Mapping[str, Set[str]] | None) -> Survival:
    visible, stored = seen.visible, seen.stored
    pieces = [normalise(p) for p in fact.pieces()]
    ignored = coincidental.get(fact.id, set()) if coincidental else set()
    answers = [a for a in fact.answers if a not in ignored]
    if all(p in visible for p in pieces):
        return "verbatim"
    if any(contains_phrase(visible, a) for a in answers):
        return "transformed"
    if all(p in visible or p in stored for p in pieces) or any(
        contains_phrase(stored, a) for a in answers
    ):
        return "in_store"
    return "gone"
