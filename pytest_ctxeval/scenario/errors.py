"""Errors in scenario files, always with file, line and column."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    path: str
    line: int  # 1-based
    column: int  # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class ScenarioError(Exception):
    """One or more problems in one scenario file."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

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
