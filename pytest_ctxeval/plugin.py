"""The pytest11 entry point: options, collection, result plumbing, session end.

Thin wiring only, and inert in a run without scenarios: configuring reads the
options and nothing else.  Strategies are resolved, the model and the output
paths checked, when the first scenario is collected; heavy imports (litellm,
pandas, the report) happen only then.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .collect import (
    ACTING_MARKERS,
    RECORD_KEY,
    SHARED_PARSING_KEY,
    USAGE_ERROR_ATTR,
    ProbeItem,
    ScenarioFile,
    junit_properties,
    register_tag,
)
from .duplicate_ids import DuplicateScenarioIds
from .failure_sections import FailureSections
from .history.options import HistoryOptions, add_history_options
from .kept_objects import keep_to_the_end, skip_the_last_collection
from .live.hooks import register_live_feedback
from .live.options import add_live_options
from .options import CtxOptions, add_options
from .scenario_config import missing_scenario_dirs, scenario_file_rule
from .session import SESSION_KEY, CtxSession
from .session_finish import finish_session

# The key of the shared parsing folder in an xdist worker's input (see xdist_collect).
WORKER_INPUT_KEY = "ctxeval_parsed_dir"
# In a worker's input: whether it evaluates a scenario's runs together (see xdist_runs).
RUNS_TOGETHER_KEY = "ctxeval_runs_together"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    add_history_options(parser)
    add_live_options(parser)  # progress, --ctx-max-failures, --ctx-verbose (see live/)


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # What pytest_collection_finish froze goes back to the collector when
    # pytest is done, after its own final collections (in unconfigure and in
    # cleanups registered later, which run first): pytester leaves none frozen.
    early_config.add_cleanup(lambda: _unfreeze(early_config))


def _unfreeze(config: pytest.Config) -> None:
    # An xdist worker ends with its session: left frozen, its objects are
    # not walked by the interpreter's last collection, so it exits sooner.
    if not hasattr(config, "workerinput"):
        gc.unfreeze()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    options = CtxOptions.from_config(config)
    # litellm builds pydantic schemas of its own types lazily, on the first
    # model call, and each one warns; that noise is not the user's.
    config.addinivalue_line(
        "filterwarnings", "ignore:.* using the `ReadOnly` qualifier:UserWarning"
    )
    # A malformed server answer makes litellm's own models warn as they are
    # serialised; the fault itself is the item's error record.
    config.addinivalue_line("filterwarnings", "ignore:Pydantic serializer warnings:UserWarning")
    ctx = CtxSession(
        options=options,
        preset_dirs=[config.rootpath / "strategies"],
        rootdir=config.rootpath,
    )
    config.stash[SESSION_KEY] = ctx
    config.add_cleanup(ctx.lock.release)
    register_live_feedback(config)
    # Listed up front, so `pytest --markers` tells why a tag "skip" is selected as tag_skip.
    for tag in sorted(ACTING_MARKERS):
        register_tag(config, tag)
    config.pluginmanager.register(DuplicateScenarioIds(), "ctxeval-duplicate-ids")
    if not hasattr(config, "workerinput"):
        from .history.run import RunHistory

        history = HistoryOptions.from_config(config)
        ctx.history = RunHistory(history, options, root=config.rootpath)
        config.pluginmanager.register(ControllerHooks(config, ctx), "ctxeval-controller")
        config.pluginmanager.register(FailureSections(), "ctxeval-failure-sections")
    elif WORKER_INPUT_KEY in config.workerinput:
        folder = Path(config.workerinput[WORKER_INPUT_KEY])
        if folder.is_dir():  # not on another machine (xdist's --tx ssh=...)
            from .xdist_collect import SharedParsing

            worker_index = int(config.workerinput.get("workerid", "gw0").lstrip("gw") or 0)
            config.stash[SHARED_PARSING_KEY] = SharedParsing(folder, worker_index)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    claim = scenario_file_rule(parent.config).claims(file_path)
    if claim is False:
        return None
    file: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    # A file that is a scenario only if it looks like one is read when it
    # is collected: once for both questions, or by one xdist worker for all.
    file.only_if_it_looks_like_one = claim is None
    shared = parent.config.stash.get(SHARED_PARSING_KEY, None)
    if shared is not None:
        shared.expect(file_path, file.parse)
    return file


def pytest_collectstart(collector: pytest.Collector) -> None:
    # What earlier scenario files built lives to the end of the session, and
    # parsing one leaves no cyclic garbage: freezing it now keeps the
    # collector's full passes, which a growing heap triggers, off it while
    # the next file is parsed.  Only where a scenario file, or a YAML file
    # that may be one, is collected.
    if isinstance(collector, ScenarioFile):
        gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    if isinstance(collector, ScenarioFile) and collector.usage_error is not None:
        # Travels with the report from an xdist worker; the controller turns
        # it into a usage error (see ControllerHooks.pytest_collectreport).
        setattr(report, USAGE_ERROR_ATTR, collector.usage_error)
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    # What collection built (modules, scenarios) lives to the end of the
    # session: kept out of the cyclic garbage collector's full passes,
    # pytest's own at session end included.  Only in a run with scenarios.
    if any(isinstance(item, ProbeItem) for item in session.items):
        # The tokenizer's vocabulary (a dict of some 200,000 entries) too:
        # every item counts tokens, and a full pass would walk it each time.
        from .llm.local_tokenizer import local_encoding

        local_encoding()
        keep_to_the_end()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # trylast: after -k/-m deselection, so deselected probes never cost a model call.
    ctx = config.stash[SESSION_KEY]
    if ctx.options.shard is not None:
        _keep_shard(config, items)
    controller = not hasattr(config, "workerinput")
    runs = controller and not config.option.collectonly
    probes = [item.nodeid for item in items if isinstance(item, ProbeItem)]
    if runs and probes:
        ctx.check_outputs()  # a usage error here comes before any item runs
        ctx.will_record = True
    if controller:
        ctx.note_ran(probes, filtered=run_is_filtered(config))
    if probes and ctx.options.baseline is not None and ctx.gate is not None:
        from .gate.shard import parse_nodeid

        ctx.gate.note_collected({parse_nodeid(nodeid) for nodeid in probes})
    # Under --dist load the controller schedules whole scenarios (see xdist_runs).
    worker_input = getattr(config, "workerinput", {RUNS_TOGETHER_KEY: True})
    selected = [
        ((item.source, item.conversation.id, item.spec.name), item.probe.id)
        for item in items
        if isinstance(item, ProbeItem)
    ]
    ctx.note_selection(selected, runs_stay_together=bool(worker_input.get(RUNS_TOGETHER_KEY)))


def _keep_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--ctx-shard=i/n: deselect the scenarios of the other shards (the same
    choice on every xdist worker, so their collections still agree)."""
    from .gate.shard import in_shard

    shard = config.stash[SESSION_KEY].options.shard
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        inside = not isinstance(item, ProbeItem) or in_shard(
            shard, item.source, item.conversation.id
        )
        (kept if inside else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def run_is_filtered(config: pytest.Config) -> bool:
    """-k, -m, node ids or --lf/--sw narrowed the run: a baseline probe that
    did not run may only be deselected, so it is not called removed."""
    option = config.option
    named = any("::" in arg for arg in config.args)
    narrowed = getattr(option, "lf", False) or getattr(option, "stepwise", False)
    return bool(option.keyword or option.markexpr or named or narrowed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    record = item.stash.get(RECORD_KEY, None)
    if record is not None and call.when == "call":
        if hasattr(item.config, "workerinput"):
            # Plain attributes travel from xdist workers to the controller with
            # the report, so only the controller ever writes results; what the
            # session's earlier record sent already is named, not sent again.
            payload, same = item.config.stash[SESSION_KEY].payload(record)
            report.ctxeval_record, report.ctxeval_same = payload, same
            report.ctxeval_worker = str(item.config.workerinput.get("workerid", ""))
        else:  # the controller is this process: it takes the record as it is
            item.config.stash[SESSION_KEY].local_records[item.nodeid] = record
    return report


def _load_report_modules() -> None:
    try:
        import pytest_ctxeval.report.html  # noqa: F401
    except Exception:  # noqa: BLE001 - the report imports it again and says what is wrong
        pass


class ControllerHooks:
    """Registered only where results are gathered: the controller under
    xdist, or the single process without it."""

    def __init__(self, config: pytest.Config, ctx: CtxSession) -> None:
        self.config = config
        self.ctx = ctx
        self.written: dict[str, Path] = {}
        # Failed tests that are not ctxeval items (and collection errors).
        self.other_failures = 0
        # Under xdist: where the workers share their parsing (see xdist_collect).
        self.parsed_dir: Path | None = None
        self._sizes: dict[str, dict[str, int]] = {}  # scenario sizes by file, read once
        # Files known to be scenario files: asked for each of thousands of
        # node ids (collection, scheduling), and a file stays one.
        self._scenario_files: set[str] = set()
        self.ledger_breaches: list[str] = []  # --ctx-fail-if's fact-ledger rules broken
        self.a_worker_crashed = False  # from then on, new workers run items alone
        # Under xdist: each item's --junitxml properties, from its call report
        # to its teardown report (a worker sends none: see ProbeItem.runtest).
        self._properties: dict[str, list[tuple[str, object]]] = {}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.parsed_dir is None:
            from .xdist_collect import make_folder, remove_folder

            folder = self.parsed_dir = make_folder()
            self.config.add_cleanup(lambda: remove_folder(folder))
        node.workerinput[WORKER_INPUT_KEY] = str(self.parsed_dir)
        from .xdist_runs import runs_together

        node.workerinput[RUNS_TOGETHER_KEY] = runs_together(self.config, self.a_worker_crashed)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # A scenario folder the ini names but that is not there would only
        # show as "collected 0 items": say which one, where it was looked for.
        missing = missing_scenario_dirs(self.config)
        if missing:
            raise pytest.UsageError("\n".join(missing))

    @property
    def runs_workers(self) -> bool:
        """Whether this process is the controller of xdist workers."""
        return self.config.pluginmanager.has_plugin("dsession")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # tryfirst: stops the run before the report is counted as a collection error.
        problem = getattr(report, USAGE_ERROR_ATTR, None)
        if problem is not None:
            raise pytest.UsageError(problem)
        if report.failed:
            self.other_failures += 1

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist only the workers collect; the ids tell the controller
        # that ctxeval items will run before any of them is scheduled.
        probes = [nodeid for nodeid in ids if self._is_probe(nodeid)]
        if not self.ctx.will_record and probes:
            self.ctx.check_outputs()
            self.ctx.will_record = True
            # From here this process only waits for the workers' reports: it
            # loads the report's libraries (pandas, jinja2) meanwhile, instead
            # of after the last item.  A run without scenarios never loads them.
            threading.Thread(target=_load_report_modules, daemon=True).start()
            skip_the_last_collection()  # of the records this process will keep
        self.ctx.note_ran(probes, filtered=run_is_filtered(self.config))

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        # --dist load (the default of -n): each scenario's items on one
        # worker, so nothing about a scenario is worked out twice.
        if config.getvalue("dist") != "load":
            return None
        from .xdist_runs import ScenarioScheduling

        return ScenarioScheduling(config, log, self._is_probe, self._session_size)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        from .xdist_runs import crash_text

        self.a_worker_crashed = True
        if self._is_probe(crashitem):
            report.longrepr = crash_text(report, RUNS_TOGETHER_KEY)
            self.ctx.add_crash_record(crashitem, str(report.longrepr))

    def _session_size(self, scope: str) -> int | None:
        """The characters of a scenario's session (``path::scenario``), as the
        worker that parsed its file noted them; None when not known."""
        if self.parsed_dir is None or "::" not in scope:
            return None
        from .xdist_collect import scenario_sizes

        path, _, scenario = scope.partition("::")
        if path not in self._sizes:
            self._sizes[path] = scenario_sizes(self.parsed_dir, self.config.rootpath / path)
        return self._sizes[path].get(scenario)

    def _is_probe(self, nodeid: str) -> bool:
        """``path::scenario::probe[strategy]`` in a scenario file."""
        path, _, rest = nodeid.partition("::")
        if "::" not in rest or not rest.endswith("]"):
            return False
        if path in self._scenario_files:
            return True
        file = self.config.rootpath / path
        found = False
        if self.parsed_dir is not None:
            from .xdist_collect import was_parsed

            found = was_parsed(self.parsed_dir, file)  # a worker took it as one: no need to read it
        if found or scenario_file_rule(self.config).collects(file):
            self._scenario_files.add(path)
            return True
        return False

    # tryfirst: the properties are on the report before --junitxml reads them.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = None
        if report.when == "teardown" and report.nodeid in self._properties:
            report.user_properties.extend(self._properties.pop(report.nodeid))
        if report.when == "call":
            # In this process: the record itself; from an xdist worker: its JSON.
            record = self.ctx.local_records.pop(report.nodeid, None)
            payload = getattr(report, "ctxeval_record", None)
            if record is not None:
                self.ctx.keep(record)
            elif payload is not None:
                same = getattr(report, "ctxeval_same", None) or []
                worker = str(getattr(report, "ctxeval_worker", ""))
                record = self.ctx.add_record(payload, same, worker)
                self._properties[report.nodeid] = junit_properties(record)
                report.user_properties.extend(self._properties[report.nodeid])
        if record is None and report.failed:
            self.other_failures += 1

    # trylast: inside the terminal reporter's wrapper, which prints the
    # ctxeval summary once this is done.
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, Any]:
        from .run_end import before_finish, exit_status

        before_finish(self.ctx, session, runs_workers=self.runs_workers)
        if not self.runs_workers:
            self.written = finish_session(self.ctx)
            result = yield
        else:
            # Under xdist the results and the report are written while xdist
            # stops its workers (waiting for them to exit), not after.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1, thread_name_prefix="ctxeval-report") as pool:
                finishing = pool.submit(finish_session, self.ctx)
                try:
                    result = yield
                finally:
                    self.written = finishing.result()
        self.ledger_breaches = exit_status(self.ctx, session, other_failures=self.other_failures)
        return result

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .run_end import write_summary

        write_summary(terminalreporter, self.ctx, self.written, self.ledger_breaches)
