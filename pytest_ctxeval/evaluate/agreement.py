"""Probes without an expectation: does the strategy's answer agree with the
full-context answer?  By normalised token F1 against a threshold, or by a
judge model's verdict; with repeats, ask k is compared with ask k."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm.cassettes import CallContext, call_context
from ..results.record import ResultRecord
from .outcome import Rates, verdict_of
from .scoring import agreement

if TYPE_CHECKING:
    from ..llm.client import ModelClient
    from .judge import JudgeResult


def agree_by_f1(
    record: ResultRecord,
    answers: list[str | None],
    references: list[str | None],
    threshold: float,
) -> None:
    scores = [agreement(a, r) for a, r in zip(answers, references, strict=True)]
    record.agreement = round(scores[0], 4)
    agreed = [score >= threshold for score in scores]
    set_agreement(record, agreed)
    if not agreed[0]:
        record.failed_checks.append(
            f"agrees with the full-context answer (token F1 {scores[0]:.2f}, needs {threshold:.2f})"
        )


def ask_judge(
    client: ModelClient, record: ResultRecord, question: str, answer: str, reference: str
) -> JudgeResult:
    from .judge import judge_agreement

    context = CallContext(record.scenario, record.strategy, record.probe, "judge")
    with call_context(context):
        return judge_agreement(client, question, answer, reference)


def apply_judgements(record: ResultRecord, judge_model: str, results: list[JudgeResult]) -> None:
    """The judge's verdicts (one per ask) into the record; its calls are counted."""
    record.cost_usd += sum(j.cost_usd for j in results)
    record.llm_calls += len(results)
    first = results[0]
    record.judge = {"model": judge_model, "agrees": first.agrees, "reason": first.reason}
    failed = next((j for j in results if j.error is not None), None)
    if failed is not None:
        # No verdict is not "disagrees": the item cannot be scored.
        record.error = f"judge {judge_model!r}: {failed.error}"
        return
    set_agreement(record, [j.agrees for j in results])
    if not first.agrees:
        record.failed_checks.append(
            f"agrees with the full-context answer (judge {judge_model}: {first.reason})"
        )


def set_agreement(record: ResultRecord, agreed: list[bool]) -> None:
    rates = Rates(sum(agreed), len(agreed))
    record.verdict = verdict_of(rates)  # type: ignore[assignment]
    record.classification = "ok" if record.verdict == "pass" else "divergent"
    record.pass_rate, record.pass_rate_interval = rates.rate, rates.interval()
    record.unstable = rates.mixed
