"""Evaluate one (scenario x strategy x probe): simulate (cached), ask the
probe, ask the full-context ground truth (cached, shared by all strategies),
score, classify, and produce the result record.

With ``concurrency`` > 1, the first probe of a scenario has every selected
probe of that scenario, under every selected strategy, evaluated at once:
the simulations stay sequential, the model calls (answers and ground truths)
of all its runs wait together in a thread pool, and the finished records are
kept for the probes' own items.  Records are the
same as one-at-a-time evaluation; only the waiting overlaps.

Answers are untrusted text.  Whatever scoring one of them raises becomes
that item's ``error`` record; no exception leaves ``evaluate``, so no item
loses its record.  Every record is sealed (secrets scrubbed, long texts
capped) before it is returned.  Ctrl-C stops the run at once: model calls
run in daemon threads that nothing waits for (see ``workers``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from ..llm.cassettes import CallContext, CassetteStore, RecordMode, call_context
from ..llm.client import ModelClient
from ..llm.faults import BREAKER_CALLS
from ..llm.mock_client import model_client
from ..llm.prompt_cache import DEFAULT_SECONDS_PER_REQUEST
from ..llm.tokens import message_tokens, shared_prefix_tokens, tools_tokens, window_tokens
from ..report.run_info import strategy_params
from ..results.record import ResultRecord, sealed
from ..scenario.build import Conversation, ProbeCase
from ..strategies.base import Window, fork_strategy
from ..strategies.registry import StrategySpec
from ..strategies.window_rules import keeps_system_prompt, window_violations
from .agreement import agree_by_f1, apply_judgements
from .calibration import decoy_pass, uncheckable
from .items import asker as _asker
from .items import failed as _failed
from .items import full_window as _full_window
from .items import judge_job as _judge_job
from .items import new_record as _new_record
from .items import recording as _recording
from .items import seed as _seed
from .judge import JudgeResult
from .ledger import FactLedger, put_ledger
from .outcome import Rates, classify, verdict_of
from .probe import ProbeAnswer
from .rollout.item import RolloutRunner
from .rollout.script import RolloutCase
from .scoring import check_answer
from .session_costs import cache_rules_named, fill_session_fields, probe_cached_cost_usd
from .simulate import SessionTrace, simulate
from .survival import fact_survival
from .sweep import history, planted_facts, sweep_cuts, sweep_probes, trace_at
from .uncheckable import UncheckableAnswer
from .window_trace import window_trace
from .workers import finished_before, run_jobs

RunKey = tuple[str, str, str]  # (scenario file, scenario id, strategy name)
_K = TypeVar("_K")
_T = TypeVar("_T")


@dataclass
class EvalSettings:
    model: str = "ctxeval/oracle"
    api_base: str | None = None
    # Without an expectation, answers must agree with the full-context answer
    # at least this much (normalised token F1; 1.0 = equal after normalisation).
    agreement_threshold: float = 0.6
    # A model that judges agreement instead of the token F1; None = F1.
    judge: str | None = None
    # Times each probe is asked, under the strategy and under the full context.
    repeat: int = 1
    # The model's context window in tokens; None = litellm's model info, if any.
    context_window: int | None = None
    # Longest answer asked of a real model; seconds per call, retries included.
    max_tokens: int | None = 1024
    deadline_s: float | None = 300.0
    # Calls in a row that time out or cannot connect before the rest fail at once.
    breaker_calls: int = BREAKER_CALLS
    # Record/replay of real-model calls; None = no cassettes.
    cassette_dir: Path | None = None
    record: RecordMode = "new"
    # Model calls in flight at once in this process; 1 = one probe at a time.
    concurrency: int = 8
    # --ctx-sweep: also ask every probe at every this-many-th user turn; None = off.
    sweep_every: int | None = None
    # The prompt-cache rules ("openai", "anthropic"; None = the model's
    # provider's) and the simulated time between a session's requests.
    cache_model: str | None = None
    seconds_per_request: float = DEFAULT_SECONDS_PER_REQUEST


@dataclass
class _Pending:
    """A probe whose window is built and whose model calls are still to come."""

    probe: ProbeCase
    record: ResultRecord
    trace: SessionTrace | None = None
    window: Window | None = None
    # The strategy's own model calls up to and including this probe's window.
    strategy_calls: int = 0
    strategy_cost_usd: float = 0.0
    strategy_input_tokens: int = 0
    # The tool calls the strategy answered during the first ask.
    retrievals: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Truth:
    """The full-context run of one probe, shared by every strategy."""

    answers: list[ProbeAnswer]
    tokens: int
    # Why there is no ground truth: the full context does not fit the model.
    beyond: str | None = None
    # The strategy whose request it is (``full``): its answers are these, not
    # asked again (a thread waiting on the same request would hold a place
    # that another run's call could take).
    same_as: str | None = None


@dataclass
class Evaluator:
    settings: EvalSettings
    client: ModelClient = field(init=False)
    # Probe ids to evaluate together per run (what pytest selected); a run
    # missing here evaluates all of its conversation's probes together.
    selection: dict[RunKey, set[str]] = field(default_factory=dict)
    # The strategies of the run by name: the selected runs of a scenario are
    # evaluated together (see _scenario_runs); a name missing here runs alone.
    specs: dict[str, StrategySpec] = field(default_factory=dict)
    _traces: dict[RunKey, SessionTrace] = field(default_factory=dict)
    judge_client: ModelClient | None = field(init=False, default=None)
    _truth: dict[tuple[str, str, str], _Truth] = field(default_factory=dict)
    _ready: dict[tuple[str, str, str, str], ResultRecord] = field(default_factory=dict)
    _batched: set[RunKey] = field(default_factory=set)
    # Probes of a run not evaluated yet (from ``selection``): a run's session
    # trace is dropped once none is left, so a long run does not keep every
    # session's windows alive (and walked by the garbage collector) to the end.
    _unfinished: dict[RunKey, set[str]] = field(default_factory=dict)
    # The selected strategies of each scenario (source, id), in item order.
    _by_scenario: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    _by_scenario_of = -1
    _rollout_runner: RolloutRunner | None = None
    # The fact ledger of each run's simulated session (per-request fact states).
    _ledgers: dict[RunKey, FactLedger] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cassettes = None
        if self.settings.cassette_dir is not None:
            cassettes = CassetteStore(self.settings.cassette_dir, self.settings.record)
        settings = self.settings
        self.client = self._client(settings.model, settings.api_base, cassettes)
        if settings.context_window is None:
            settings.context_window = context_window_of(settings.model)
        if settings.judge is not None:
            # The judge shares the server only when it is the model under test.
            api_base = settings.api_base if settings.judge == settings.model else None
            self.judge_client = self._client(settings.judge, api_base, cassettes)

    def _client(
        self, model: str, api_base: str | None, cassettes: CassetteStore | None
    ) -> ModelClient:
        # The mocks answer in-process: no litellm import, no per-call overhead.
        return model_client(
            model,
            api_base=api_base,
            cassettes=cassettes,
            max_tokens=self.settings.max_tokens,
            deadline_s=self.settings.deadline_s,
            breaker_calls=self.settings.breaker_calls,
        )

    def _rollouts(self) -> RolloutRunner:
        if self._rollout_runner is None:
            self._rollout_runner = RolloutRunner(
                self.client,
                self.settings.model,
                self.settings.agreement_threshold,
                self.judge_client,
            )
        return self._rollout_runner

    @property
    def stop_reason(self) -> str | None:
        """Why the run should stop here: the model under test (or the judge)
        turned out to be set up wrong, so every further item would fail the same way."""
        for client in (self.client, self.judge_client):
            if client is not None and client.health.broken:
                return client.health.stop_line
        return None

    def evaluate(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, *, source: str
    ) -> ResultRecord:
        if isinstance(probe, RolloutCase):  # rollout mode: its own loop (see evaluate/rollout/)
            return sealed(self._rollouts().record(conversation, spec, source))
        run: RunKey = (source, conversation.id, spec.name)
        ready = self._ready.pop((*run, probe.id), None)
        if ready is not None:
            return ready
        runs = [(spec, [probe])]
        if self.settings.concurrency > 1 and run not in self._batched:
            # Once per run: a re-run of an item (e.g. rerunfailures) asks only itself.
            runs = [
                (
                    other,
                    self._batch_probes(
                        conversation,
                        (source, conversation.id, other.name),
                        probe if other is spec else None,
                    ),
                )
                for other in self._scenario_runs(conversation, spec, source)
            ]
        try:
            records = self._evaluate_many(conversation, runs, source)
        except KeyboardInterrupt as interrupt:
            # Ctrl-C: the items whose answers had all arrived keep their
            # records, for the run's end to write (``finished_before_interrupt``).
            for (name, probe_id), record in getattr(interrupt, "ctxeval_records", {}).items():
                self._ready[(source, conversation.id, name, probe_id)] = sealed(record)
            raise
        except Exception as exc:  # a bug past every per-item guard: still one record each
            message = f"evaluating the probe raised {type(exc).__name__}: {exc}"
            records = [
                _failed(_new_record(conversation, s, p, source, self.settings.model), message)
                for s, probes in runs
                for p in probes
            ]
        records = [sealed(record) for record in records]
        mine = None
        at = iter(records)
        for other, probes in runs:
            key: RunKey = (source, conversation.id, other.name)
            for asked, record in zip(probes, at, strict=False):
                if other is spec and asked.id == probe.id:
                    mine = record
                else:
                    self._ready[(*key, asked.id)] = record
            self._forget_finished(key, probes)
        assert mine is not None
        return mine

    def _scenario_runs(
        self, conversation: Conversation, spec: StrategySpec, source: str
    ) -> list[StrategySpec]:
        """``spec``, then the other selected strategies of the scenario not
        evaluated yet: their model calls wait together, not one run after
        another (all of a scenario's items run in this process: without
        xdist, or scheduled together under it)."""
        if self._by_scenario_of != len(self.selection):  # indexed once per selection
            self._by_scenario.clear()
            for key in self.selection:
                self._by_scenario.setdefault(key[:2], []).append(key[2])
            self._by_scenario_of = len(self.selection)
        runs = [spec]
        for name in self._by_scenario.get((source, conversation.id), []):
            other = self.specs.get(name)
            if other is not None and other is not spec:
                if (source, conversation.id, name) not in self._batched:
                    runs.append(other)
        for other in runs:
            self._batched.add((source, conversation.id, other.name))
        return runs

    def _batch_probes(
        self, conversation: Conversation, run: RunKey, probe: ProbeCase | None
    ) -> list[ProbeCase]:
        """The probes of ``run`` to evaluate together: the selected ones, and
        ``probe`` (the item asking, when it is of this run)."""
        wanted = self.selection.get(run)
        sweep = self.settings.sweep_every
        return [
            p
            for p in [*conversation.probes, *sweep_probes(conversation, sweep)]
            if (probe is not None and p.id == probe.id) or wanted is None or p.id in wanted
        ]

    def _forget_finished(self, run: RunKey, probes: list[ProbeCase]) -> None:
        """Drop the run's session trace once every selected probe has its
        record (a re-run item, e.g. under rerunfailures, simulates again)."""
        wanted = self.selection.get(run)
        if wanted is None:
            return  # not told which probes will come: keep it
        left = self._unfinished.setdefault(run, set(wanted))
        left.difference_update(p.id for p in probes)
        if not left:
            self._traces.pop(run, None)

    def _evaluate_many(
        self,
        conversation: Conversation,
        runs: list[tuple[StrategySpec, list[ProbeCase]]],
        source: str,
    ) -> list[ResultRecord]:
        """The records of every (strategy, probe) of ``runs``, in order: the
        model calls of all of them wait together, up to --ctx-concurrency."""
        # Strategies need not be thread-safe: simulate and build windows here.
        pending = [
            (spec, self._prepare(conversation, spec, p, source))
            for spec, probes in runs
            for p in probes
        ]
        jobs: dict[tuple[str, str, str, int], Callable[[], ProbeAnswer]] = {}
        truths: dict[tuple[str, str, str, int], Callable[[], ProbeAnswer]] = {}
        new_truths: dict[str, _Truth] = {}
        for spec, item in pending:
            if item.window is None:
                continue
            context = CallContext(conversation.id, spec.name, item.probe.id)
            for r in range(self.settings.repeat):
                # The first ask shows what the model fetched; later ones would repeat it.
                window = _recording(item.window, item.retrievals) if r == 0 else item.window
                jobs[("answer", spec.name, item.probe.id, r)] = _asker(
                    self.client, window, context, self.settings.model, _seed(r)
                )
            key = (source, conversation.id, item.probe.id)
            if key in self._truth or item.probe.id in new_truths:
                continue
            window, tokens = _full_window(conversation, item.probe, self.settings.model)
            truth = new_truths[item.probe.id] = _Truth([], tokens)
            limit = self.settings.context_window
            if limit is not None and tokens > limit:
                truth.beyond = (
                    f"the full context ({tokens:,} tokens) exceeds the model's context "
                    f"window ({limit:,} tokens)"
                )
                continue
            if not item.window.tools and item.window.messages == window.messages:
                # The strategy's own request (`full`): its answers are the truth's.
                truth.same_as = spec.name
                continue
            context = CallContext(conversation.id, None, item.probe.id, "full-context ground truth")
            for r in range(self.settings.repeat):
                truths[("truth", "", item.probe.id, r)] = _asker(
                    self.client, window, context, self.settings.model, _seed(r)
                )
        interrupted = None
        try:
            answers = self._run({**jobs, **truths}, self.client)
        except KeyboardInterrupt as interrupt:
            interrupted, answers = interrupt, finished_before(interrupt)
        repeats = range(self.settings.repeat)
        for probe_id, truth in new_truths.items():
            if truth.beyond is None:
                kind, name = ("answer", truth.same_as) if truth.same_as else ("truth", "")
                if any((kind, name, probe_id, r) not in answers for r in repeats):
                    continue  # interrupted before the ground truth came back
                truth.answers = [answers[(kind, name, probe_id, r)] for r in repeats]
                exceeded = next((a for a in truth.answers if a.context_exceeded), None)
                if exceeded is not None:
                    truth.beyond = f"the full context does not fit the model: {exceeded.error}"
            self._truth[(source, conversation.id, probe_id)] = truth
        finished = []
        complete = []
        for spec, item in pending:
            if item.window is not None and item.trace is not None:
                known = self._truth.get((source, conversation.id, item.probe.id))
                keys = [("answer", spec.name, item.probe.id, r) for r in repeats]
                if known is None or any(k not in answers for k in keys):
                    continue  # interrupted before its answers came back
                truth = known
                if interrupted is not None and self._needs_judge(item):
                    continue  # a judgement would be one more call after Ctrl-C
                asked = [answers[k] for k in keys]
                try:
                    self._finish(item, asked, truth)
                except UncheckableAnswer as exc:
                    _failed(item.record, f"cannot score {exc}")
                except Exception as exc:  # untrusted text broke a check: this item's error only
                    _failed(item.record, f"scoring raised {type(exc).__name__}: {exc}")
                else:
                    finished.append((item, asked, truth))
            complete.append((spec, item))
        if interrupted is not None:
            done = {(s.name, i.probe.id): i.record for s, i in complete}
            interrupted.ctxeval_records = done  # type: ignore[attr-defined]
            raise interrupted
        self._judge_agreements(finished)
        return [item.record for _, item in pending]

    def _needs_judge(self, item: _Pending) -> bool:
        probe = item.probe
        return (
            self.judge_client is not None
            and probe.expect is None
            and probe.constraint_check is None
        )

    def finished_before_interrupt(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, *, source: str
    ) -> ResultRecord | None:
        """After Ctrl-C: the record of an item that never ran but whose
        answers had all arrived in an earlier item's batch, if there is one."""
        return self._ready.pop((source, conversation.id, spec.name, probe.id), None)

    def _run(self, jobs: dict[_K, Callable[[], _T]], client: ModelClient) -> dict[_K, _T]:
        return run_jobs(jobs, 1 if client.in_process else self.settings.concurrency)

    def _prepare(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, source: str
    ) -> _Pending:
        model = self.settings.model
        record = _new_record(conversation, spec, probe, source, model)
        item = _Pending(probe, record)
        try:
            item.trace = trace = trace_at(self._trace(conversation, spec, source), probe)
            record.session_prompt_tokens = [r.prompt_tokens for r in trace.requests]
            fill_session_fields(record, trace, model)
            record.strategy_params = strategy_params(spec, trace.strategy)
            # The fork still counts into the shared trace: take this probe's
            # share (the session's calls are counted once, in session_*), then
            # put the session's totals back for the next probe.
            totals = (trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens)
            try:
                strategy = fork_strategy(trace.strategy)
                strategy.add({"role": "user", "content": probe.question})
                window = strategy.window()
            finally:
                item.strategy_calls = trace.strategy_calls - totals[0]
                item.strategy_cost_usd = trace.strategy_cost_usd - totals[1]
                item.strategy_input_tokens = trace.strategy_prompt_tokens - totals[2]
                trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens = totals
        except Exception as exc:  # a strategy bug is this item's error, not the run's
            record.error = f"strategy {spec.name!r} raised {type(exc).__name__}: {exc}"
            return item
        given = [*history(conversation, probe), {"role": "user", "content": probe.question}]
        record.window_trace = window_trace(
            given,
            window.messages,
            window.tools,
            message_tokens=partial(message_tokens, model=model),
            tools_tokens=partial(tools_tokens, model=model),
        )
        ledger = self._ledgers.get((source, conversation.id, spec.name))
        if ledger is not None and not hasattr(probe, "base_id"):  # a sweep point sees less
            put_ledger(record, ledger)
        record.fact_survival = fact_survival(
            planted_facts(conversation, probe),
            window,
            coincidental=conversation.coincidental_answers,
        )
        record.prompt_tokens = window_tokens(window.messages, window.tools, model)
        record.cached_prefix_tokens = shared_prefix_tokens(
            item.trace.last_window,
            window.messages,
            model,
            previous_tools=item.trace.last_tools,
            tools=window.tools,
        )
        if item.trace.cache is not None:
            use = item.trace.cache.peek(window.messages, window.tools)
            record.probe_cached_tokens = use.cached_tokens
            record.probe_cache_write_tokens = use.write_tokens
        broken = window_violations(given, window, keep_system=keeps_system_prompt(spec.params))
        if broken:
            # A window that breaks the rules would make any verdict meaningless.
            record.error = f"strategy {spec.name!r} broke the window rules: " + "; ".join(broken)
            return item
        limit = self.settings.context_window
        if limit is not None and record.prompt_tokens > limit:
            record.error = (
                f"strategy {spec.name!r} built a window of {record.prompt_tokens:,} tokens, "
                f"over the model's context window of {limit:,}"
            )
            return item
        found = decoy_pass(conversation, probe)
        if found is not None:
            # A decoy that knows nothing meets the expectation: no verdict, no model call.
            uncheckable(record, found, item.trace)
            return item
        item.window = window
        return item

    def _finish(self, item: _Pending, asked: list[ProbeAnswer], truth: _Truth) -> None:
        record, trace, first = item.record, item.trace, asked[0]
        assert trace is not None
        record.repeat = len(asked)
        record.answer = first.answer
        record.ground_truth_answer = truth.answers[0].answer if truth.answers else None
        if len(asked) > 1:
            record.answers = [a.answer for a in asked]
            record.ground_truth_answers = [a.answer for a in truth.answers] or None
        record.full_prompt_tokens = truth.tokens
        record.no_ground_truth = truth.beyond
        # Calls, cost and latency add up over every ask of the probe.
        record.llm_calls = sum(a.llm_calls for a in asked) + item.strategy_calls
        record.strategy_calls = item.strategy_calls
        record.strategy_input_tokens = item.strategy_input_tokens
        record.memory_retrievals = sum(a.memory_retrievals for a in asked)
        record.retrievals = item.retrievals
        record.cost_usd = sum(a.cost_usd for a in asked) + item.strategy_cost_usd
        # What the provider's prompt cache would take off the probe request.
        record.cached_cost_usd = probe_cached_cost_usd(record, self.settings.model, len(asked))
        record.latency_s = round(sum(a.latency_s for a in asked), 6)
        record.cumulative_input_tokens = trace.cumulative_input_tokens + sum(first.request_tokens)
        record.probe_input_tokens = sum(sum(a.request_tokens) for a in asked)
        record.peak_prompt_tokens = max([trace.peak_prompt_tokens, *first.request_tokens])
        for answer in asked:
            record.failed_checks.extend(f"tool call: {e}" for e in answer.tool_errors)
        failed = next((a for a in asked if a.error is not None), None)
        if failed is not None:
            if failed.context_exceeded:
                record.error = (
                    f"the strategy's window ({record.prompt_tokens:,} tokens) does not fit "
                    f"the model: {failed.error}"
                )
            else:
                record.error = f"model error: {failed.error}"
            return
        truth_failed = next((a for a in truth.answers if a.error is not None), None)
        if truth.beyond is None and truth_failed is not None:
            record.error = f"model error in the full-context run: {truth_failed.error}"
            return
        if item.probe.expect is None and item.probe.constraint_check is None:
            if truth.beyond is not None:
                record.classification = "beyond_context"
                record.error = f"nothing to score against: no expectation, and {truth.beyond}"
            elif self.judge_client is None:
                agree_by_f1(
                    record,
                    [a.answer for a in asked],
                    [t.answer for t in truth.answers],
                    self.settings.agreement_threshold,
                )
            return
        self._score(record, item.probe, asked, truth)

    def _score(
        self, record: ResultRecord, probe: ProbeCase, asked: list[ProbeAnswer], truth: _Truth
    ) -> None:
        failures = [_check(a.answer, probe, "the strategy's answer") for a in asked]
        strategy = Rates(sum(1 for f in failures if not f), len(failures))
        record.failed_checks.extend(next((f for f in failures if f), []))
        record.verdict = verdict_of(strategy)  # type: ignore[assignment]
        record.pass_rate, record.pass_rate_interval = strategy.rate, strategy.interval()
        record.unstable = strategy.mixed
        if truth.beyond is not None:
            record.classification = "beyond_context"
            return
        truth_failures = [_check(a.answer, probe, "the full-context answer") for a in truth.answers]
        full = Rates(sum(1 for f in truth_failures if not f), len(truth_failures))
        record.ground_truth_verdict = verdict_of(full)  # type: ignore[assignment]
        record.ground_truth_pass_rate = full.rate
        record.ground_truth_pass_rate_interval = full.interval()
        record.unstable = strategy.mixed or full.mixed
        record.classification = classify(strategy, full)  # type: ignore[assignment]
        if record.classification == "context_loss":
            record.verdict = "fail"  # credibly worse, even if it passed half of the asks

    def _judge_agreements(self, finished: list[tuple[_Pending, list[ProbeAnswer], _Truth]]) -> None:
        """Without an expectation, and with a judge model: ask it, in parallel."""
        judge = self.judge_client
        if judge is None:
            return
        jobs: dict[tuple[int, int], Callable[[], JudgeResult]] = {}
        for index, (item, asked, truth) in enumerate(finished):
            record, probe = item.record, item.probe
            if record.error is not None or record.classification == "beyond_context":
                continue
            if probe.expect is not None or probe.constraint_check is not None:
                continue
            for r, (answer, reference) in enumerate(zip(asked, truth.answers, strict=True)):
                jobs[(index, r)] = _judge_job(
                    judge, record, probe.question, answer.answer or "", reference.answer or ""
                )
        verdicts = self._run(jobs, judge)
        for index, (item, asked, _) in enumerate(finished):
            results = [verdicts[(index, r)] for r in range(len(asked)) if (index, r) in verdicts]
            if results:
                apply_judgements(item.record, judge.model, results)

    def _trace(self, conversation: Conversation, spec: StrategySpec, source: str) -> SessionTrace:
        key = (source, conversation.id, spec.name)
        if key not in self._traces:
            strategy = spec.create()
            context = CallContext(conversation.id, spec.name, None, "strategy call in the session")
            with call_context(context):
                self._traces[key] = simulate(
                    conversation,
                    strategy,
                    client=self.client,
                    model=self.settings.model,
                    fork_at=sweep_cuts(conversation, self.settings.sweep_every),
                    cache_rules=cache_rules_named(self.settings.cache_model, self.settings.model),
                    seconds_per_request=self.settings.seconds_per_request,
                    observe=self._ledger_for(key, conversation),
                )
        return self._traces[key]

    def _ledger_for(self, key: RunKey, conversation: Conversation) -> Any:
        """The observer that keeps the run's fact ledger (see evaluate.ledger);
        None when the scenario plants no facts."""
        if not conversation.facts:
            return None
        ledger = FactLedger(list(conversation.facts), dict(conversation.coincidental_answers))
        self._ledgers[key] = ledger
        return lambda window, compacted: ledger.observe(window, compacted=compacted)


def context_window_of(model: str) -> int | None:
    """The model's input limit from litellm's bundled model info; None if unknown."""
    if model.startswith("ctxeval/"):
        return None
    from ..llm._litellm import get_litellm

    try:
        info = get_litellm().get_model_info(model)
    except Exception:  # unknown to the bundled map (local servers): the provider will say
        return None
    limit = info.get("max_input_tokens") or info.get("max_tokens")
    return int(limit) if limit else None


def _check(answer: str | None, probe: ProbeCase, whose: str) -> list[str]:
    try:
        return [
            failure
            for expect in (probe.expect, probe.constraint_check)
            if expect is not None
            for failure in check_answer(answer, expect, probe.question)
        ]
    except UncheckableAnswer as exc:
        raise UncheckableAnswer(f"{whose}: {exc}") from None
