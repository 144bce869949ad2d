"""Evaluate one (scenario x strategy x probe): simulate (cached), ask the
probe, ask the full-context ground truth (cached, shared by all strategies),
score, classify, and produce the result record.

With ``concurrency`` > 1, the first probe of a (scenario, strategy) run has
every selected probe of that run evaluated at once: the simulation stays
sequential, the model calls (answers and ground truths) run in a thread pool,
and the finished records are kept for the probes' own items.  Records are the
same as one-at-a-time evaluation; only the waiting overlaps.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..llm.cassettes import CallContext, CassetteStore, RecordMode, call_context
from ..llm.client import ModelClient
from ..llm.costs import cache_savings_usd
from ..llm.tokens import shared_prefix_tokens, window_tokens
from ..results.record import ResultRecord
from ..scenario.build import Conversation, ProbeCase
from ..strategies.base import Window, fork_strategy
from ..strategies.registry import StrategySpec
from .probe import ProbeAnswer, ask
from .scoring import agreement, check_answer, classify
from .simulate import SessionTrace, simulate
from .survival import fact_survival

RunKey = tuple[str, str, str]  # (scenario file, scenario id, strategy name)


@dataclass
class EvalSettings:
    model: str = "ctxeval/oracle"
    api_base: str | None = None
    # Without an expectation, answers must agree with the full-context answer
    # at least this much (1.0 = equal after normalisation).
    agreement_threshold: float = 1.0
    # Record/replay of real-model calls; None = no cassettes.
    cassette_dir: Path | None = None
    record: RecordMode = "new"
    # Model calls in flight at once in this process; 1 = one probe at a time.
    concurrency: int = 8


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


@dataclass
class Evaluator:
    settings: EvalSettings
    client: ModelClient = field(init=False)
    # Probe ids to evaluate together per run (what pytest selected); a run
    # missing here evaluates all of its conversation's probes together.
    selection: dict[RunKey, set[str]] = field(default_factory=dict)
    _traces: dict[RunKey, SessionTrace] = field(default_factory=dict)
    _truth: dict[tuple[str, str, str], tuple[ProbeAnswer, int]] = field(default_factory=dict)
    _ready: dict[tuple[str, str, str, str], ResultRecord] = field(default_factory=dict)
    _batched: set[RunKey] = field(default_factory=set)

    def __post_init__(self) -> None:
        cassettes = None
        if self.settings.cassette_dir is not None:
            cassettes = CassetteStore(self.settings.cassette_dir, self.settings.record)
        self.client = ModelClient(
            self.settings.model, api_base=self.settings.api_base, cassettes=cassettes
        )

    def evaluate(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, *, source: str
    ) -> ResultRecord:
        run: RunKey = (source, conversation.id, spec.name)
        ready = self._ready.pop((*run, probe.id), None)
        if ready is not None:
            return ready
        probes = [probe]
        if self.settings.concurrency > 1 and run not in self._batched:
            # Once per run: a re-run of an item (e.g. rerunfailures) asks only itself.
            self._batched.add(run)
            wanted = self.selection.get(run)
            probes = [
                p
                for p in conversation.probes
                if p.id == probe.id or wanted is None or p.id in wanted
            ]
        records = self._evaluate_many(conversation, spec, probes, source)
        for other, record in zip(probes, records, strict=True):
            if other.id != probe.id:
                self._ready[(*run, other.id)] = record
        return records[probes.index(probe)]

    def _evaluate_many(
        self,
        conversation: Conversation,
        spec: StrategySpec,
        probes: list[ProbeCase],
        source: str,
    ) -> list[ResultRecord]:
        # Strategies need not be thread-safe: simulate and build windows here.
        pending = [self._prepare(conversation, spec, p, source) for p in probes]
        jobs: dict[tuple[str, str], Callable[[], ProbeAnswer]] = {}
        truth_windows: dict[str, tuple[Window, int]] = {}
        for item in pending:
            if item.window is None:
                continue
            context = CallContext(conversation.id, spec.name, item.probe.id)
            jobs[("answer", item.probe.id)] = _asker(
                self.client, item.window, context, self.settings.model
            )
            if (source, conversation.id, item.probe.id) not in self._truth:
                window, tokens = _full_window(conversation, item.probe, self.settings.model)
                truth_windows[item.probe.id] = (window, tokens)
                if item.window.messages == window.messages and not item.window.tools:
                    # The same request (e.g. under `full`): ask once, as a
                    # cassette replay would when the two run one after the other.
                    continue
                context = CallContext(
                    conversation.id, None, item.probe.id, "full-context ground truth"
                )
                jobs[("truth", item.probe.id)] = _asker(
                    self.client, window, context, self.settings.model
                )
        answers = self._run(jobs)
        for probe_id, (_, tokens) in truth_windows.items():
            truth = answers.get(("truth", probe_id)) or answers[("answer", probe_id)]
            self._truth[(source, conversation.id, probe_id)] = (truth, tokens)
        for item in pending:
            if item.window is not None and item.trace is not None:
                truth, full_tokens = self._truth[(source, conversation.id, item.probe.id)]
                self._finish(item, answers[("answer", item.probe.id)], truth, full_tokens)
        return [item.record for item in pending]

    def _run(
        self, jobs: dict[tuple[str, str], Callable[[], ProbeAnswer]]
    ) -> dict[tuple[str, str], ProbeAnswer]:
        workers = min(self.settings.concurrency, len(jobs))
        if workers <= 1:
            return {key: job() for key, job in jobs.items()}
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ctxeval-model") as pool:
            futures = {key: pool.submit(job) for key, job in jobs.items()}
            return {key: future.result() for key, future in futures.items()}

    def _prepare(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, source: str
    ) -> _Pending:
        model = self.settings.model
        record = ResultRecord(
            scenario=conversation.id,
            scenario_file=source,
            strategy=spec.name,
            model=model,
            probe=probe.id,
            verdict="error",
            classification="error",
            expected=_expected(probe),
            turns=sum(1 for m in conversation.messages if m["role"] != "system"),
        )
        item = _Pending(probe, record)
        try:
            item.trace = trace = self._trace(conversation, spec, source)
            # The fork still counts into the shared trace: take this probe's
            # share, then put the session's totals back for the next probe.
            totals = (trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens)
            try:
                strategy = fork_strategy(trace.strategy)
                strategy.add({"role": "user", "content": probe.question})
                window = strategy.window()
            finally:
                item.strategy_calls = trace.strategy_calls
                item.strategy_cost_usd = trace.strategy_cost_usd
                item.strategy_input_tokens = trace.strategy_prompt_tokens
                trace.strategy_calls, trace.strategy_cost_usd, trace.strategy_prompt_tokens = totals
        except Exception as exc:  # a strategy bug is this item's error, not the run's
            record.error = f"strategy {spec.name!r} raised {type(exc).__name__}: {exc}"
            return item
        record.fact_survival = fact_survival(conversation.facts, window)
        record.prompt_tokens = window_tokens(window.messages, window.tools, model)
        record.cached_prefix_tokens = shared_prefix_tokens(
            item.trace.last_window, window.messages, model
        )
        item.window = window
        return item

    def _finish(
        self, item: _Pending, answer: ProbeAnswer, truth: ProbeAnswer, full_tokens: int
    ) -> None:
        record, trace = item.record, item.trace
        assert trace is not None
        record.answer = answer.answer
        record.ground_truth_answer = truth.answer
        record.full_prompt_tokens = full_tokens
        record.llm_calls = answer.llm_calls + item.strategy_calls
        record.strategy_calls = item.strategy_calls
        record.strategy_input_tokens = item.strategy_input_tokens
        record.memory_retrievals = answer.memory_retrievals
        record.cost_usd = answer.cost_usd + item.strategy_cost_usd
        # What the provider's prompt cache would take off the probe request.
        savings = cache_savings_usd(
            self.settings.model, record.cached_prefix_tokens, record.prompt_tokens
        )
        record.cached_cost_usd = max(record.cost_usd - savings, 0.0)
        record.latency_s = round(answer.latency_s, 6)
        record.cumulative_input_tokens = trace.cumulative_input_tokens + sum(answer.request_tokens)
        record.peak_prompt_tokens = max([trace.peak_prompt_tokens, *answer.request_tokens])
        if answer.tool_errors:
            record.failed_checks.extend(f"tool call: {e}" for e in answer.tool_errors)
        if answer.error is not None:
            record.error = f"model error: {answer.error}"
            return
        if truth.error is not None:
            record.error = f"model error in the full-context run: {truth.error}"
            return
        self._score(record, item.probe, answer, truth)

    def _score(
        self, record: ResultRecord, probe: ProbeCase, answer: ProbeAnswer, truth: ProbeAnswer
    ) -> None:
        if probe.expect is None and probe.constraint_check is None:
            agrees = agreement(answer.answer, truth.answer) >= self.settings.agreement_threshold
            record.verdict = "pass" if agrees else "fail"
            record.classification = "ok" if agrees else "divergent"
            if not agrees:
                record.failed_checks.append("agrees with the full-context answer")
            return
        failed = _check(answer.answer, probe)
        truth_failed = _check(truth.answer, probe)
        record.failed_checks.extend(failed)
        record.verdict = "fail" if failed else "pass"
        record.ground_truth_verdict = "fail" if truth_failed else "pass"
        record.classification = classify(not failed, not truth_failed)  # type: ignore[assignment]

    def _trace(self, conversation: Conversation, spec: StrategySpec, source: str) -> SessionTrace:
        key = (source, conversation.id, spec.name)
        if key not in self._traces:
            strategy = spec.create()
            context = CallContext(conversation.id, spec.name, None, "strategy call in the session")
            with call_context(context):
                self._traces[key] = simulate(
                    conversation, strategy, client=self.client, model=self.settings.model
                )
        return self._traces[key]


def _full_window(conversation: Conversation, probe: ProbeCase, model: str) -> tuple[Window, int]:
    """The ground truth's request: every message of every chat, then the probe."""
    messages = [*conversation.messages, {"role": "user", "content": probe.question}]
    return Window(messages), window_tokens(messages, None, model)


def _asker(
    client: ModelClient, window: Window, context: CallContext, model: str
) -> Callable[[], ProbeAnswer]:
    def run() -> ProbeAnswer:
        with call_context(context):
            try:
                return ask(client, window, model=model)
            except Exception as exc:  # e.g. a tool handler's bug: this item's error only
                return ProbeAnswer(error=f"{type(exc).__name__}: {exc}")

    return run


def _check(answer: str | None, probe: ProbeCase) -> list[str]:
    return [
        failure
        for expect in (probe.expect, probe.constraint_check)
        if expect is not None
        for failure in check_answer(answer, expect)
    ]


def _expected(probe: ProbeCase) -> dict[str, Any] | None:
    expected = (
        probe.expect.model_dump(exclude_none=True, exclude_defaults=True) if probe.expect else {}
    )
    if probe.constraint_check is not None:
        expected["constraint"] = {
            "id": probe.constraint,
            **probe.constraint_check.model_dump(exclude_none=True, exclude_defaults=True),
        }
    return expected or None
