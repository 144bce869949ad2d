"""Fact survival: is each needle/constraint still in the window at the probe?

Deterministic and model-free: the cheapest regression signal."""

from __future__ import annotations

from ..results.record import Survival
from ..scenario.build import Fact
from ..strategies.base import Window, content_text


def fact_survival(facts: list[Fact], window: Window) -> dict[str, Survival]:
    visible = "\n".join(content_text(m) for m in window.messages).casefold()
    stored = "\n".join(window.retrievable).casefold()
    states: dict[str, Survival] = {}
    for fact in facts:
        pieces = [p.casefold() for p in fact.pieces()]
        answers = [a.casefold() for a in fact.answers]
        if all(p in visible for p in pieces):
            states[fact.id] = "verbatim"
        elif answers and any(a in visible for a in answers):
            states[fact.id] = "transformed"
        elif all(p in visible or p in stored for p in pieces) or any(a in stored for a in answers):
            states[fact.id] = "in_store"
        else:
            states[fact.id] = "gone"
    return states
