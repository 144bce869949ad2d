"""At collection, a warning for each scenario id that a second file uses
(pytest's warnings summary names both files)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .scenario.duplicates import ScenarioIds


class DuplicateScenarioIds:
    """A pytest plugin object: registered once per run (plugin.pytest_configure)."""

    def __init__(self) -> None:
        # Made at the first scenario item: a run without scenarios imports
        # nothing of the scenario package (see tests/test_inert.py).
        self.ids: ScenarioIds | None = None
        self.warned: set[tuple[str, str]] = set()

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        conversation: Any = getattr(item, "conversation", None)
        if conversation is None:
            return
        from .scenario.duplicates import ScenarioIds
        from .scenario.errors import Problem, ScenarioWarning

        if self.ids is None:
            self.ids = ScenarioIds()
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
