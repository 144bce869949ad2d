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
