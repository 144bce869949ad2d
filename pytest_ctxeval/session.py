"""The run's state for the plugin: options, strategies, the evaluator and
the records gathered on the controller.

Nothing here is resolved or checked until a scenario is collected: a run
without scenarios pays for no strategy import and never fails on a ctxeval
setting.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .kept_objects import FREEZE_EVERY_RECORDS, keep_out_of_full_collections
from .options import CtxOptions

if TYPE_CHECKING:
    from .evaluate.runner import Evaluator
    from .gate.run import Gate, GateResult
    from .history.run import RunHistory
    from .results.record import ResultRecord
    from .results.record_payload import PayloadReceiver, PayloadSender
    from .results.run_info import RunInfo
    from .results.shared_values import SharedValues
    from .run_lock import RunLock
    from .strategies.registry import StrategySpec

SESSION_KEY = pytest.StashKey["CtxSession"]()


def _run_lock() -> RunLock:
    from .run_lock import RunLock

    return RunLock()


@dataclass
class CtxSession:
    options: CtxOptions
    # Where the project's strategy presets live.
    preset_dirs: list[Path] = field(default_factory=list)
    # The project under test: its git commit goes into the records and the report.
    rootdir: Path = field(default_factory=Path.cwd)
    started_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    run_id: str = ""
    records: list[ResultRecord] = field(default_factory=list)
    # What the kept records of a session share, kept once (made with the first record).
    shared: SharedValues | None = None
    # Under xdist: a worker's records leave out what their session sent
    # already (see results.record_payload); made with the first record.
    _sent: PayloadSender | None = None
    _sent_count = 0
    _received: PayloadReceiver | None = None
    # Without xdist: the record of each item just run, by node id, for the
    # controller hooks in this same process (no trip through JSON).
    local_records: dict[str, ResultRecord] = field(default_factory=dict)
    # Controller side: ctxeval items were selected to run, so this run writes
    # the results file and the report (even if no record arrives).
    will_record: bool = False
    # Tags already registered as markers.
    registered_markers: set[str] = field(default_factory=set)
    _strategies: list[StrategySpec] | None = None
    # --ctx-budget: the named strategies that take no budget (they run once).
    without_budget: list[str] = field(default_factory=list)
    _model_checked: bool = False
    _tokenizer_used: bool = False
    _outputs_checked: bool = False
    _evaluator: Evaluator | None = None
    # Controller side: this run's hold on its output folders (see run_lock).
    lock: RunLock = field(default_factory=lambda: _run_lock())
    # Selected probe ids per (scenario file, scenario, strategy): see note_selection.
    selection: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    batch_runs: bool = True
    # Controller side, for the gate: the (scenario file, strategy) pairs that
    # ran, and whether -k/-m/node ids narrowed the run.
    ran: set[tuple[str, str]] = field(default_factory=set)
    # ... and the probes (scenario file, scenario, strategy, probe) it selected.
    selected: set[tuple[str, str, str, str]] = field(default_factory=set)
    filtered: bool = False
    gate_result: GateResult | None = None
    _gate: Gate | None = None
    _run_info: RunInfo | None = None
    # Controller side: the run history and partial reruns (see history/).
    history: RunHistory | None = None

    def __post_init__(self) -> None:
        from .output_loss import RunOutputs

        self.outputs: RunOutputs = RunOutputs(self.options.results)
        if not self.run_id:
            self.run_id = self.started_at.strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]

    @property
    def run_info(self) -> RunInfo:
        """Controller side: the run's version, commit and start time, found once."""
        if self._run_info is None:
            from .results.run_info import collect_run_info

            self._run_info = collect_run_info(
                self.rootdir,
                model=self.options.model,
                run_id=self.run_id,
                started_at=self.started_at,
                strategies=self._strategies or (),
            )
        return self._run_info

    @property
    def strategies(self) -> list[StrategySpec]:
        """The strategies to run, resolved on first use (importing every
        built-in takes far longer than the rest of the plugin's start-up).
        A bad name is a pytest.UsageError."""
        if self._strategies is None:
            from .strategies.registry import UnknownStrategyError, resolve

            try:
                specs = resolve(self.options.strategies, preset_dirs=self.preset_dirs)
            except UnknownStrategyError as exc:
                raise pytest.UsageError(f"--ctx-strategy: {exc}") from None
            if not specs:
                raise pytest.UsageError("--ctx-strategy: no strategy named")
            self._strategies = self._with_budgets(specs)
        return self._strategies

    def _with_budgets(self, specs: list[StrategySpec]) -> list[StrategySpec]:
        """--ctx-budget: each budgeted strategy once per budget."""
        from .budgets import with_budgets
        from .strategies.registry import UnknownStrategyError

        try:
            budgeted = with_budgets(specs, self.options.budgets)
        except UnknownStrategyError as exc:
            raise pytest.UsageError(f"--ctx-budget: {exc}") from None
        self.without_budget = budgeted.without_budget
        return budgeted.specs

    def budget_note(self) -> str | None:
        """Controller side, once per run: which strategies --ctx-budget could not
        vary (they take no budget_tokens parameter)."""
        if not self.options.budgets:
            return None
        try:
            _ = self.strategies
        except pytest.UsageError:
            return None
        if not self.without_budget:
            return None
        names = ", ".join(self.without_budget)
        if len(self.without_budget) == 1:
            return f"--ctx-budget: {names} takes no budget_tokens parameter; it ran once"
        return f"--ctx-budget: {names} take no budget_tokens parameter; each ran once"

    def prepare_collection(self) -> None:
        """What collecting a scenario needs: the strategies, and a model that
        can be called.  Raises pytest.UsageError."""
        _ = self.strategies
        self.check_model()
        self.use_model_tokenizer()
        _ = self.gate

    def use_model_tokenizer(self) -> None:
        """--ctx-tokenizer: count the model's tokens with its own tokenizer."""
        if self._tokenizer_used:
            return
        from .llm.tokens import forget_tokenizers, use_tokenizer

        forget_tokenizers()  # an earlier run in this process may have set one
        self._tokenizer_used = True
        path = self.options.tokenizer
        if path is None:
            return
        from .llm.model_tokenizer import TokenizerFileError, load_tokenizer

        try:
            use_tokenizer(self.options.model, load_tokenizer(path))
        except TokenizerFileError as exc:
            raise pytest.UsageError(f"--ctx-tokenizer: {exc}") from None

    def check_model(self) -> None:
        """An unknown model is a usage error, found before anything runs."""
        if self._model_checked:
            return
        from .llm.models import describe_unknown_model

        # A replay-only run sends nothing, so it needs no key.
        calls_model = self.options.record != "none"
        problem = describe_unknown_model(
            self.options.model, self.options.api_base, calls_model=calls_model
        )
        if problem:
            raise pytest.UsageError(f"--ctx-model: {problem}")
        if self.options.judge:
            problem = describe_unknown_model(
                self.options.judge, self.options.api_base, calls_model=calls_model
            )
            if problem:
                raise pytest.UsageError(f"--ctx-judge: {problem}")
        self._model_checked = True

    @property
    def gate(self) -> Gate | None:
        """The regression gate when --ctx-baseline or --ctx-update-baseline is
        given; an unreadable baseline is a pytest.UsageError."""
        options = self.options
        if options.baseline is None:
            return None
        if self._gate is None:
            from .gate.run import BaselineError, Gate

            if options.update_baseline:
                # Refused before the old baseline is read: it may be a link to anything.
                from .output_paths import OutputPath, output_problems

                where = [OutputPath("--ctx-baseline", options.baseline, "file")]
                problems = output_problems(where, root=self.rootdir)
                if problems:
                    raise pytest.UsageError("\n".join(problems))
            gate = Gate(
                options.baseline,
                options.update_baseline,
                options.fail_if,
                options.shard,
                allow_removed=options.allow_removed,
            )
            try:
                gate.load()
            except BaselineError as exc:
                raise pytest.UsageError(f"--ctx-baseline: {exc}") from None
            self._gate = gate
        return self._gate

    def note_ran(self, nodeids: list[str], *, filtered: bool) -> None:
        """Controller side: which probes this run selected, for the gate's
        "removed" list."""
        self.filtered = self.filtered or filtered
        if not nodeids:
            return
        from .gate.shard import parse_nodeid

        for nodeid in nodeids:
            key = parse_nodeid(nodeid)
            self.ran.add((key[0], key[2]))
            self.selected.add(key)

    def check_outputs(self) -> None:
        """Every output can be written: a usage error naming the option and
        the path otherwise, before the first model call is paid for."""
        if self._outputs_checked:
            return
        from .output_paths import output_problems

        problems = output_problems(self.options.output_paths(), root=self.rootdir)
        if problems:
            raise pytest.UsageError("\n".join(problems))
        from .run_lock import OutputsBusy

        try:
            self.lock.take("--ctx-results", self.options.results)
            self.lock.take("--ctx-report", self.options.report)
        except OutputsBusy as exc:
            self.lock.release()
            raise pytest.UsageError(str(exc)) from None
        self._outputs_checked = True
        if self.history is not None:  # before this run's first record replaces them
            self.history.before_writing()

    @property
    def has_evaluator(self) -> bool:
        return self._evaluator is not None

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            from .evaluate.regex_budget import reset_regex_budget
            from .evaluate.runner import EvalSettings, Evaluator

            reset_regex_budget()  # a run's own regex time (pytester runs several in one process)

            options = self.options
            self._evaluator = Evaluator(
                EvalSettings(
                    model=options.model,
                    api_base=options.api_base,
                    cassette_dir=options.cassettes,
                    record=options.record,  # type: ignore[arg-type]
                    concurrency=options.concurrency if self.batch_runs else 1,
                    repeat=options.repeat,
                    agreement_threshold=options.agreement,
                    judge=options.judge,
                    context_window=options.context_window,
                    max_tokens=options.max_tokens,
                    deadline_s=options.timeout,
                    breaker_calls=options.breaker,
                    sweep_every=options.sweep_every,
                    cache_model=options.cache_model,
                    seconds_per_request=options.seconds_per_turn,
                ),
                selection=self.selection,
                specs={spec.name: spec for spec in self._strategies or ()},
            )
        return self._evaluator

    def note_selection(
        self, probes: list[tuple[tuple[str, str, str], str]], *, runs_stay_together: bool
    ) -> None:
        """Remember the selected probes of each run: the evaluator asks the model
        for them together, and a probe deselected with -k or -m costs no call.

        Under an xdist ``--dist`` mode that may send the probes of one run to
        different workers (``worksteal``, ``loadgroup``), asking for all of
        them in each would pay twice, so then every item asks for itself and
        the worker processes are the parallelism (``load``, the default of
        ``-n``, keeps a scenario on one worker).

        ``probes``: each selected probe's run (scenario file, scenario,
        strategy) and its id."""
        self.batch_runs = runs_stay_together
        self.selection.clear()
        for run, probe_id in probes:
            self.selection.setdefault(run, set()).add(probe_id)

    def add_record(self, payload: str, same: list[str], worker: str) -> ResultRecord:
        """Controller side: ``keep`` the record an xdist worker sent as JSON,
        less the values (``same``) its session's earlier record sent."""
        if self._received is None:
            from .results.record_payload import PayloadReceiver

            self._received = PayloadReceiver()
        return self.keep(self._received.record(payload, same, worker))

    def payload(self, record: ResultRecord) -> tuple[str, list[str]]:
        """Worker side: ``record`` as its report's payload (see
        results.record_payload).  What the worker keeps alive meanwhile is
        frozen every few records, as the controller's kept records are."""
        if self._sent is None:
            from .results.record_payload import PayloadSender

            self._sent = PayloadSender()
        self._sent_count += 1
        if self._sent_count % FREEZE_EVERY_RECORDS == 0:
            keep_out_of_full_collections()
        return self._sent.payload(record)

    def add_crash_record(self, nodeid: str, message: str) -> ResultRecord:
        """Controller side: an ``error`` record for an item whose xdist worker
        died while running it (the worker could send none)."""
        from .evaluate.sweep import sweep_turn
        from .gate.shard import parse_nodeid
        from .results.record import ResultRecord

        path, scenario, strategy, probe = parse_nodeid(nodeid)
        record = ResultRecord(
            nodeid=nodeid,
            scenario=scenario,
            scenario_file=path,
            strategy=strategy,
            model=self.options.model,
            probe=probe,
            probe_turn=sweep_turn(probe),
            repeat=self.options.repeat,
            verdict="error",
            classification="error",
            error=message,
        )
        return self.keep(record)

    def keep(self, record: ResultRecord) -> ResultRecord:
        """Controller side: keep and persist one finished item's record.  A
        write that fails (a full disk) is noted in ``outputs.losses``, not
        raised: the run goes on and the report still gets every record."""
        record.run_id = self.run_id
        self.run_info.stamp(record)
        if self.options.shard is not None:
            record.shard = "{}/{}".format(*self.options.shard)
        if self.shared is None:
            from .results.shared_values import SharedValues

            self.shared = SharedValues()
        # Equal values of a session's records held once; written once too
        # (the text of a shared value is kept: see results.record_text).
        self.shared.share(record)
        self.outputs.write(record)
        self.records.append(record)
        if len(self.records) % FREEZE_EVERY_RECORDS == 0:
            keep_out_of_full_collections()
        return record
