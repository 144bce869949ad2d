"""One scenario id in two files: both run, but their results share one name
in the results file, the report and the baseline, so one hides the other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScenarioIds:
    """The file each scenario id was first seen in."""

    first: dict[str, str] = field(default_factory=dict)

    def add(self, scenario_id: str, path: str) -> str | None:
        """The warning when ``scenario_id`` was seen in another file, else None."""
        seen = self.first.setdefault(scenario_id, path)
        if seen == path:
            return None
        return (
            f"scenario id {scenario_id!r} is used in two files: {seen} and {path}; "
            "their results would share one name (rename one)"
        )
