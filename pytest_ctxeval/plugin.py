"""The pytest11 entry point: options, collection, result plumbing, session end.

Thin wiring only.  Heavy imports (litellm, pandas, the report) happen lazily,
when scenarios are collected or a report is written, so installing the plugin
costs nothing in test runs that have no scenarios.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .collect import RECORD_KEY, ScenarioFile
from .options import CtxOptions, add_options
from .session import SESSION_KEY, CtxSession

SCENARIO_SUFFIXES = (".yaml", ".yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from .strategies.registry import UnknownStrategyError, resolve

    options = CtxOptions.from_config(config)
    try:
        strategies = resolve(options.strategies, preset_dirs=[config.rootpath / "strategies"])
    except UnknownStrategyError as exc:
        raise pytest.UsageError(f"--ctx-strategy: {exc}") from None
    if not strategies:
        raise pytest.UsageError("--ctx-strategy: no strategy named")
    # litellm builds pydantic schemas of its own types lazily, on the first
    # model call, and each one warns; that noise is not the user's.
    config.addinivalue_line(
        "filterwarnings", "ignore:.* using the `ReadOnly` qualifier:UserWarning"
    )
    ctx = CtxSession(options=options, strategies=strategies)
    # Checked here, where a UsageError is a clean one-line error; a mock model
    # is checked by name, a real one through litellm (imported only then).
    ctx.check_model()
    config.stash[SESSION_KEY] = ctx
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ControllerHooks(ctx), "ctxeval-controller")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    if file_path.suffix not in SCENARIO_SUFFIXES:
        return None
    config = parent.config
    session = config.stash[SESSION_KEY]
    if _in_dirs(file_path, session.options.scenario_dirs) or file_path.resolve() in _named_files(
        config
    ):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _in_dirs(path: Path, dirs: tuple[Path, ...]) -> bool:
    """Inside a scenario directory, and not in a part whose name starts with
    ``_`` (the place for ``!include`` fragments)."""
    for d in dirs:
        if path.is_relative_to(d):
            return not any(part.startswith("_") for part in path.relative_to(d).parts)
    return False


_NAMED_FILES = pytest.StashKey[frozenset[Path]]()


def _named_files(config: pytest.Config) -> frozenset[Path]:
    """Files named on the command line, resolved once per run."""
    if _NAMED_FILES not in config.stash:
        base = config.invocation_params.dir
        config.stash[_NAMED_FILES] = frozenset(
            (base / arg.split("::")[0]).resolve() for arg in config.args
        )
    return config.stash[_NAMED_FILES]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # trylast: after -k/-m deselection, so deselected probes never cost a model call.
    together = not hasattr(config, "workerinput") or config.option.dist in ("loadscope", "loadfile")
    config.stash[SESSION_KEY].note_selection(items, runs_stay_together=together)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    record = item.stash.get(RECORD_KEY, None)
    if record is not None and call.when == "call":
        # A plain string attribute travels from xdist workers to the controller
        # with the report, so only the controller ever writes results.
        report.ctxeval_record = record.model_dump_json()
    return report


class ControllerHooks:
    """Registered only where results are gathered: the controller under
    xdist, or the single process without it."""

    def __init__(self, ctx: CtxSession) -> None:
        self.ctx = ctx
        self.written: dict[str, Path] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, "ctxeval_record", None)
        if payload is not None and report.when == "call":
            self.ctx.add_record(payload)

    def pytest_sessionfinish(self) -> None:
        self.written = self.ctx.finish()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.ctx.records:
            return
        from .report.terminal import summary_lines

        terminalreporter.section("ctxeval")
        for line in summary_lines(self.ctx.records):
            terminalreporter.write_line(line)
        for what, path in self.written.items():
            terminalreporter.write_line(f"{what}: {path}")
