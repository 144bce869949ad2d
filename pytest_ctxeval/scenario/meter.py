"""What one template has used, checked against the file's limits: shared by
the sandbox that renders and the estimates that refuse in advance."""

from __future__ import annotations

import time
from typing import Any

from .limits import LimitExceeded, Limits

_SIZED = (str, list, tuple, dict, set, frozenset)


class Meter:
    """What one template has used; raises LimitExceeded past a limit."""

    def __init__(self, limits: Limits, deadline: float) -> None:
        self.limits = limits
        self.deadline = deadline
        self.chars = 0
        self.steps = 0

    def room(self) -> int:
        """Characters the template may still produce."""
        return self.limits.template_chars - self.chars

    def allow(self, size: int, what: str, *, estimated: bool = False) -> None:
        """Refuse, before it runs, an operation that would make ``size``
        characters (at most that, when ``estimated``: what lists and other
        values would print as is bounded, not counted exactly)."""
        if size > self.room():
            found = f"{what} would make {size:,} characters"
            if estimated:
                found = f"{what} would make more than {self.room():,} characters"
            if self.chars:
                found += f" on top of the {self.chars:,} the template has already made"
            raise LimitExceeded(self.limits.exceeded("template_chars", found))

    def produced(self, value: Any) -> None:
        if isinstance(value, _SIZED):
            self.chars += len(value)
            if self.chars > self.limits.template_chars:
                found = f"the template makes more than {self.limits.template_chars:,} characters"
                raise LimitExceeded(self.limits.exceeded("template_chars", found))
        self.tick()

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > self.limits.template_steps:
            found = (
                f"the template runs more than {self.limits.template_steps:,} "
                "loop iterations and calls"
            )
            raise LimitExceeded(self.limits.exceeded("template_steps", found))
        self.tick()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            found = (
                f"rendering the templates of this file ran past {self.limits.template_seconds:,} s"
            )
            raise LimitExceeded(self.limits.exceeded("template_seconds", found))
