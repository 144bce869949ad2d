"""At collection, a warning for each scenario id that a second file uses
(pytest's warnings summary names both files)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from .scenario.duplicates import ScenarioIds
from .scenario.errors import Problem, ScenarioWarning


class DuplicateScenarioIds:
    """A pytest plugin object: registered once per run (plugin.pytest_configure)."""

    def __init__(self) -> None:
        self.ids = ScenarioIds()
        self.warned: set[tuple[str, str]] = set()

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        conversation: Any = getattr(item, "conversation", None)
        if conversation is None:
            return
        path = item.nodeid.split("::", 1)[0]
        message = self.ids.add(conversation.id, path)
        if message is None or (conversation.id, path) in self.warned:
            return
        self.warned.add((conversation.id, path))
        warnings.warn_explicit(
            ScenarioWarning(message, Problem(path, 1, 1, message)),
            ScenarioWarning,
            filename=str(item.path),
            lineno=1,
        )
