"""Errors in scenario files, always with file, line and column."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


# Problems printed for one file; a generated or mangled file can have
# thousands, and the first ones are what the author fixes first.
SHOWN_PROBLEMS = 50


class NotAScenario(Exception):
    """The file's YAML, once read, is not a scenario file (see the loader's
    ``only_if``): nothing to report, the file is left alone."""


class ScenarioError(Exception):
    """One or more problems in one scenario file."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = [str(p) for p in problems[:SHOWN_PROBLEMS]]
        if len(problems) > SHOWN_PROBLEMS:
            more = len(problems) - SHOWN_PROBLEMS
            lines.append(f"{problems[0].path}: ... and {more:,} more problems in this file")
        super().__init__("\n".join(lines))

    @classmethod
    def at(cls, path: str, line: int, column: int, message: str) -> ScenarioError:
        return cls([Problem(path, line, column, message)])


class ScenarioWarning(UserWarning):
    """A scenario that loads but may not test what its author meant, e.g. an
    expectation the probe's own question already meets.  pytest lists these
    in its warnings summary; ``-W error::pytest_ctxeval.scenario.errors.ScenarioWarning``
    makes them errors."""

    def __init__(self, message: str, problem: Problem | None = None) -> None:
        super().__init__(message)
        # Where and what, for printing as "file:line:col: warning: ..."; None
        # when the warning was rebuilt from its message (pytest-xdist does that).
        self.problem = problem

    @classmethod
    def of(cls, problem: Problem) -> ScenarioWarning:
        return cls(str(problem), problem)


def closest(word: object, options: Iterable[object]) -> str | None:
    """The option a misspelt ``word`` most likely meant, if one is close
    enough: ``closest("prob", [..., "probes"]) == "probes"``."""
    close = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.6)
    return close[0] if close else None
