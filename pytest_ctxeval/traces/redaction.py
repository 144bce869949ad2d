"""Secrets and personal data out of imported traces.

Every string of every window and reply goes through the plugin's own
redaction (key-shaped text such as ``Bearer ...`` and ``sk-...``, and the
values of key-like environment variables), then through the team's
``--redact-pattern`` regular expressions.  Windows and session are redacted
alike, so a replayed window still matches the session it came from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..redact import REDACTED, scrub, scrub_values


class BadPattern(ValueError):
    pass


def compile_patterns(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise BadPattern(
                f"--redact-pattern {pattern!r}: not a regular expression ({exc}); "
                "expected a Python regular expression such as 'ACME-[0-9]{6}'"
            ) from None
        if compiled[-1].search(""):
            raise BadPattern(
                f"--redact-pattern {pattern!r} matches the empty string; expected a pattern "
                "that matches only what it redacts"
            )
    return compiled


class Redactor:
    def __init__(self, patterns: Sequence[re.Pattern[str]] = ()) -> None:
        self.patterns = list(patterns)
        self.count = 0  # strings changed

    def text(self, value: str) -> str:
        clean = scrub(scrub_values(value, scenario=False))
        for pattern in self.patterns:
            clean = pattern.sub(REDACTED, clean)
        if clean != value:
            self.count += 1
        return clean

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        return value
