"""The run's live feedback, as pytest hooks: the progress line and
--ctx-max-failures on the controller, the call counts a worker sends with
each item's last report.

Under xdist the counts travel as a plain string attribute of the teardown
report (as an item's record does, see plugin.pytest_runtest_makereport); the
controller keeps the latest from each worker and adds them up."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator
from typing import Any

import pytest

from ..llm.call_meter import METER, CallCounts
from ..session import SESSION_KEY
from .options import live_options
from .progress import Pacer, Progress, progress_line
from .terminal_line import LiveLine

CALLS_ATTR = "ctxeval_calls"


def stop_message(losses: int) -> str:
    return f"stopped after {losses} context losses (--ctx-max-failures)"


class WorkerCalls:
    """On an xdist worker: this worker's call counts with each item's teardown report."""

    def __init__(self, worker: str) -> None:
        self.worker = worker

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, Any]:
        report = yield
        if call.when == "teardown":
            counts = {"worker": self.worker, **METER.counts().as_dict()}
            setattr(report, CALLS_ATTR, json.dumps(counts))
        return report


class LiveFeedback:
    """On the controller (or the single process)."""

    def __init__(self, config: pytest.Config, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.options = live_options(config)
        self.clock = clock
        self.started = clock()
        self.pacer = Pacer(self.options.progress_every, clock)
        self.total = 0
        self.done = 0
        self.losses = 0
        self._seen = 0  # records of the session already looked at for losses
        self.stopped: str | None = None
        self._workers: dict[str, CallCounts] = {}
        self._session: pytest.Session | None = None
        self._line: LiveLine | None = None

    # -- what the run is ------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session
        METER.reset()  # pytester runs several sessions in one process

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.total = max(self.total, len(ids))  # every worker collects the same items

    @property
    def active(self) -> bool:
        """Only a run that evaluates ctxeval items shows anything."""
        return self.config.stash[SESSION_KEY].will_record

    # -- each item's end --------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Generator[None, Any, Any]:
        return (yield from self._around_pytest_writing())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        line = self._terminal_line()
        if line is not None:
            line.erase()  # pytest writes its own output next
        try:
            return (yield)
        finally:
            self._after_report(report)
            if line is not None and self.stopped is None:
                line.draw(progress_line(self.progress()))

    def _around_pytest_writing(self) -> Generator[None, Any, Any]:
        line = self._terminal_line()
        if line is not None:
            line.erase()
        try:
            return (yield)
        finally:
            if line is not None:
                line.draw(progress_line(self.progress()))

    def _after_report(self, report: pytest.TestReport) -> None:
        payload = getattr(report, CALLS_ATTR, None)
        if isinstance(payload, str):
            data = json.loads(payload)
            self._workers[str(data.get("worker", ""))] = CallCounts.from_dict(data)
        if not self.active:
            return
        self._count_losses()
        if report.when != "teardown":
            return
        self.done += 1
        if self._plain_lines() and self.pacer.due():
            self._write_line(progress_line(self.progress()))

    def _count_losses(self) -> None:
        records = self.config.stash[SESSION_KEY].records
        fresh = records[self._seen :]
        self._seen = len(records)
        self.losses += sum(1 for r in fresh if r.classification == "context_loss")
        limit = self.options.max_failures
        if limit and self.losses >= limit and self.stopped is None:
            self.stopped = stop_message(self.losses)
            self._stop(self.stopped)

    def _stop(self, message: str) -> None:
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is not None:  # xdist's controller stops its workers, as for -x
            dsession.shouldstop = message
        elif self._session is not None:
            # shouldfail, not shouldstop: the run ends as failed (exit 1), not interrupted.
            self._session.shouldfail = message

    def progress(self) -> Progress:
        calls = sum(self._workers.values(), CallCounts()) if self._workers else METER.counts()
        return Progress(self.done, self.total, calls, self.clock() - self.started)

    # -- where it goes ----------------------------------------------------------

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _plain_lines(self) -> bool:
        mode = self.options.progress
        return mode == "on" or (mode == "auto" and self._terminal_line() is None)

    def _terminal_line(self) -> LiveLine | None:
        """The line refreshed in place, on a terminal only; None otherwise."""
        if self.options.progress == "off" or not self.active:
            return None
        if self._line is None:
            self._line = LiveLine.for_reporter(self._reporter(), self.config)
        return self._line if self._line.usable else None

    def _write_line(self, text: str) -> None:
        reporter = self._reporter()
        if reporter is None:
            return
        # On a row of its own: pytest may be halfway through a row of dots.
        writer = getattr(reporter, "_tw", None)
        if writer is not None and writer.width_of_current_line:
            writer.line()
        reporter.write_line(text)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        finally:
            if self._line is not None:
                self._line.erase()

    # -- the run's end ------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        # Before the other hooks read it: a run stopped for its losses failed,
        # whether pytest (exit 1) or xdist (interrupted) ended it.
        if self.stopped is not None and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.INTERRUPTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.stopped is not None:
            terminalreporter.write_line(self.stopped)


def register_live_feedback(config: pytest.Config) -> None:
    """The controller's progress and stop, or a worker's call counts."""
    live_options(config)  # a bad value is a usage error before anything runs
    if hasattr(config, "workerinput"):
        worker = str(config.workerinput.get("workerid", "gw0"))
        config.pluginmanager.register(WorkerCalls(worker), "ctxeval-live-worker")
    else:
        config.pluginmanager.register(LiveFeedback(config), "ctxeval-live")
