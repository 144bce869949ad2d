"""Evaluate one (scenario x strategy x probe): simulate (cached), ask the
probe, ask the full-context ground truth (cached, shared by all strategies),
score, classify, and produce the result record."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..llm.client import ModelClient
from ..llm.tokens import shared_prefix_tokens, window_tokens
from ..results.record import ResultRecord
from ..scenario.build import Conversation, ProbeCase
from ..strategies.base import Window, fork_strategy
from ..strategies.full import FullStrategy
from ..strategies.registry import StrategySpec
from .probe import ProbeAnswer, ask
from .scoring import agreement, check_answer, classify
from .simulate import SessionTrace, simulate
from .survival import fact_survival


@dataclass
class EvalSettings:
    model: str = "ctxeval/oracle"
    api_base: str | None = None
    # Without an expectation, answers must agree with the full-context answer
    # at least this much (1.0 = equal after normalisation).
    agreement_threshold: float = 1.0


@dataclass
class Evaluator:
    settings: EvalSettings
    client: ModelClient = field(init=False)
    _traces: dict[tuple[str, str, str], SessionTrace] = field(default_factory=dict)
    _truth: dict[tuple[str, str, str], tuple[ProbeAnswer, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.client = ModelClient(self.settings.model, api_base=self.settings.api_base)

    def evaluate(
        self, conversation: Conversation, spec: StrategySpec, probe: ProbeCase, *, source: str
    ) -> ResultRecord:
        model = self.settings.model
        record = ResultRecord(
            scenario=conversation.id,
            scenario_file=source,
            strategy=spec.name,
            model=model,
            probe=probe.id,
            verdict="error",
            classification="error",
            expected=probe.expect.model_dump(exclude_none=True) if probe.expect else None,
            turns=sum(1 for m in conversation.messages if m["role"] != "system"),
        )
        try:
            trace = self._trace(conversation, spec, source)
            strategy = fork_strategy(trace.strategy)
            strategy.add({"role": "user", "content": probe.question})
            window = strategy.window()
        except Exception as exc:  # a strategy bug is this item's error, not the run's
            record.error = f"strategy {spec.name!r} raised {type(exc).__name__}: {exc}"
            return record

        record.fact_survival = fact_survival(conversation.facts, window)
        record.prompt_tokens = window_tokens(window.messages, window.tools, model)
        record.cached_prefix_tokens = shared_prefix_tokens(trace.last_window, window.messages, model)

        answer = ask(self.client, window, model=model)
        truth, full_tokens = self._ground_truth(conversation, probe, source)
        record.answer = answer.answer
        record.ground_truth_answer = truth.answer
        record.full_prompt_tokens = full_tokens
        record.llm_calls = answer.llm_calls + trace.strategy_calls
        record.memory_retrievals = answer.memory_retrievals
        record.cost_usd = answer.cost_usd + trace.strategy_cost_usd
        record.latency_s = round(answer.latency_s, 6)
        record.cumulative_input_tokens = trace.cumulative_input_tokens + sum(answer.request_tokens)
        record.peak_prompt_tokens = max([trace.peak_prompt_tokens, *answer.request_tokens])
        if answer.tool_errors:
            record.failed_checks.extend(f"tool call: {e}" for e in answer.tool_errors)
        if answer.error is not None:
            record.error = f"model error: {answer.error}"
            return record
        if truth.error is not None:
            record.error = f"model error in the full-context run: {truth.error}"
            return record
        self._score(record, probe, answer, truth)
        return record

    def _score(
        self, record: ResultRecord, probe: ProbeCase, answer: ProbeAnswer, truth: ProbeAnswer
    ) -> None:
        if probe.expect is None:
            agrees = agreement(answer.answer, truth.answer) >= self.settings.agreement_threshold
            record.verdict = "pass" if agrees else "fail"
            record.classification = "ok" if agrees else "divergent"
            if not agrees:
                record.failed_checks.append("agrees with the full-context answer")
            return
        failed = check_answer(answer.answer, probe.expect)
        truth_failed = check_answer(truth.answer, probe.expect)
        record.failed_checks.extend(failed)
        record.verdict = "fail" if failed else "pass"
        record.ground_truth_verdict = "fail" if truth_failed else "pass"
        record.classification = classify(not failed, not truth_failed)  # type: ignore[assignment]

    def _trace(self, conversation: Conversation, spec: StrategySpec, source: str) -> SessionTrace:
        key = (source, conversation.id, spec.name)
        if key not in self._traces:
            strategy = spec.create()
            self._traces[key] = simulate(
                conversation, strategy, client=self.client, model=self.settings.model
            )
        return self._traces[key]

    def _ground_truth(
        self, conversation: Conversation, probe: ProbeCase, source: str
    ) -> tuple[ProbeAnswer, int]:
        key = (source, conversation.id, probe.id)
        if key not in self._truth:
            full = FullStrategy()
            for message in conversation.messages:
                full.add(message)
            full.add({"role": "user", "content": probe.question})
            window: Window = full.window()
            tokens = window_tokens(window.messages, None, self.settings.model)
            self._truth[key] = (ask(self.client, Window(window.messages), model=self.settings.model), tokens)
        return self._truth[key]
