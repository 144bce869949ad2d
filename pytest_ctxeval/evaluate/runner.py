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
from typing import TypeVar

from ..llm.call_meter import METER
from ..llm.cassettes import CallContext, CassetteStore
from ..llm.client import ModelClient
from ..llm.mock_client import model_client
from ..results.record import ResultRecord, sealed
from ..results.shared_values import SharedValues
from ..scenario.build import Conversation, ProbeCase
from ..strategies.registry import StrategySpec
from .agreement import apply_judgements
from .finishing import Finishing
from .items import asker as _asker
from .items import failed as _failed
from .items import full_window as _full_window
from .items import judge_job as _judge_job
from .items import new_record as _new_record
from .items import recording as _recording
from .items import seed as _seed
from .judge import JudgeResult
from .ledger import FactLedger
from .preparing import Preparing
from .probe import ProbeAnswer
from .rollout.item import RolloutRunner
from .rollout.script import RolloutCase
from .run_state import EvalSettings, RunKey, _Pending, _Truth
from .simulate import SessionTrace
from .sweep import sweep_probes
from .uncheckable import UncheckableAnswer
from .workers import finished_before, run_jobs

# EvalSettings and RunKey live in run_state; they are imported from here too.
__all__ = ["EvalSettings", "Evaluator", "RunKey", "context_window_of"]

_K = TypeVar("_K")
_T = TypeVar("_T")


@dataclass
class Evaluator(Preparing, Finishing):
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
    # The fact ledger of each run's simulated session (see evaluate.ledger).
    _ledgers: dict[RunKey, FactLedger] = field(default_factory=dict)
    # Equal values of a session's records made one object before sealing:
    # sealing then writes each once (see results.record_text).
    _shared: SharedValues = field(default_factory=SharedValues)

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
        for record in records:
            self._shared.share(record)
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
            self._shared.forget(run)

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
        METER.plan(len(jobs) + len(truths))  # the per-call log's total ("call 12/40")
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
