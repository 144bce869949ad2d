"""pytest's end-of-run sections in time linear in the number of items.

For each failure it prints (and each pass under ``-rP``), pytest looks for
the item's teardown output by scanning every setup and teardown report of
the run.  With thousands of failing probes that is quadratic: a LoCoMo-size
run (16,720 items, 10,760 of them failing) spent 6 minutes printing its
FAILURES section, after its results and report were written.  A setup or
teardown report that passed sits in the run's statistics under the empty
category, and only the teardown output it captured is ever printed from it;
the reports without any are set aside while the sections are printed, and
put back at once after."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest


class FailureSections:
    """Registered where the terminal summary is written."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, Any, Any]:
        with phase_reports_with_output(terminalreporter.stats):
            return (yield)


def prints_nothing(report: Any) -> bool:
    """A passed setup or teardown report with no teardown output: no
    end-of-run section shows anything of it."""
    if getattr(report, "when", None) not in ("setup", "teardown"):
        return False
    sections = getattr(report, "sections", ())
    return not any("teardown" in name for name, _ in sections)


@contextmanager
def phase_reports_with_output(stats: dict[str, list[Any]]) -> Iterator[None]:
    """Within the block, ``stats[""]`` holds only the reports that can print
    something; the list object and its order are as they were after it."""
    phases = stats.get("")
    if not phases:
        yield
        return
    whole = list(phases)
    phases[:] = [report for report in whole if not prints_nothing(report)]
    shown = len(phases)
    try:
        yield
    finally:
        phases[:] = whole + phases[shown:]  # and any report added meanwhile
