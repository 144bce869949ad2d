"""Finishing a probe once its answers are in: totals, errors, then the
verdict against the expectation or the full-context answer."""

from __future__ import annotations

from ..llm.client import ModelClient
from ..results.record import ResultRecord
from ..scenario.build import ProbeCase
from .agreement import agree_by_f1
from .outcome import Rates, classify, verdict_of
from .probe import ProbeAnswer
from .run_state import EvalSettings, _Pending, _Truth
from .scoring import check_answer
from .session_costs import probe_cached_cost_usd
from .uncheckable import UncheckableAnswer


class Finishing:
    """The evaluator's finishing half (a mixin of ``runner.Evaluator``)."""

    settings: EvalSettings
    judge_client: ModelClient | None

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
