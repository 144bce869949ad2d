"""The parts of one item's evaluation outside the evaluator's flow: the
jobs that ask the model (answers, ground truths, the judge) and the record
of an item before it is scored, or once it failed."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from ..llm.cassettes import CallContext, call_context
from ..llm.client import ModelClient
from ..llm.tokens import tokenizer_name, window_tokens
from ..results.record import ResultRecord
from ..results.run_info import plain
from ..scenario.build import Conversation, ProbeCase
from ..strategies.base import Window
from ..strategies.registry import StrategySpec
from ..textcap import cap_text
from .agreement import ask_judge
from .judge import JudgeResult
from .probe import ProbeAnswer, ask
from .sweep import history, probe_turn

# What a record keeps of each text a tool call at the probe returned.
RETRIEVAL_TEXT_CHARS = 2_000


def full_window(conversation: Conversation, probe: ProbeCase, model: str) -> tuple[Window, int]:
    """The ground truth's request: every message of every chat, then the probe."""
    messages = [*history(conversation, probe), {"role": "user", "content": probe.question}]
    return Window(messages), window_tokens(messages, None, model)


def seed(repeat: int) -> int | None:
    """The first ask is the plain request (so existing cassettes replay);
    each further one carries its own seed, a distinct request."""
    return None if repeat == 0 else repeat


def recording(window: Window, retrievals: list[dict[str, Any]]) -> Window:
    """``window`` whose tool handler also notes each call it answers in ``retrievals``."""
    handler = window.tool_handler
    if handler is None:
        return window

    def answer(name: str, args: dict[str, Any]) -> str:
        result = handler(name, args)
        text = result if isinstance(result, str) else str(result)
        retrievals.append(
            {
                "tool": name,
                "args": plain(args),
                "text": cap_text(text, RETRIEVAL_TEXT_CHARS),
                "chars": len(text),
            }
        )
        return result

    return dataclasses.replace(window, tool_handler=answer)


def asker(
    client: ModelClient, window: Window, context: CallContext, model: str, seed: int | None
) -> Callable[[], ProbeAnswer]:
    def run() -> ProbeAnswer:
        with call_context(context):
            try:
                return ask(client, window, model=model, seed=seed)
            except Exception as exc:  # e.g. a tool handler's bug: this item's error only
                return ProbeAnswer(error=f"{type(exc).__name__}: {exc}")

    return run


def judge_job(
    judge: ModelClient, record: ResultRecord, question: str, answer: str, reference: str
) -> Callable[[], JudgeResult]:
    def run() -> JudgeResult:
        try:
            return ask_judge(judge, record, question, answer, reference)
        except Exception as exc:  # no verdict for this item; the others still get theirs
            return JudgeResult(False, "", 0.0, f"judge raised {type(exc).__name__}: {exc}")

    return run


def new_record(
    conversation: Conversation, spec: StrategySpec, probe: ProbeCase, source: str, model: str
) -> ResultRecord:
    """The record of one item before anything is known: an error until scored."""
    given = history(conversation, probe)
    return ResultRecord(
        scenario=conversation.id,
        scenario_file=source,
        strategy=spec.name,
        model=model,
        tokenizer=tokenizer_name(model),
        probe=probe.id,
        probe_digest=hashlib.sha256(probe.question.encode()).hexdigest()[:16],
        verdict="error",
        classification="error",
        expected=expected(probe),
        turns=sum(1 for m in given if m["role"] != "system"),
        probe_turn=probe_turn(conversation, probe),
        constraint=probe.constraint,
        needle=probe.needle,
        evidence=list(probe.evidence),
        strategy_params=plain(spec.params),
        tags=list(conversation.scenario.tags),
        # A depth is of the whole session: a sweep point sees only part of it.
        needle_depth=needle_depth(conversation, probe) if given is conversation.messages else None,
    )


def needle_depth(conversation: Conversation, probe: ProbeCase) -> float | None:
    """The depth the probe's needle was planted at; None for a needle planted
    at a message number, or a probe of no needle."""
    needle = next((n for n in conversation.scenario.needles if n.id == probe.needle), None)
    return needle.depth if needle is not None else None


def failed(record: ResultRecord, message: str) -> ResultRecord:
    """``record`` turned into an error, without the verdicts half-set before it failed."""
    record.error = message
    record.verdict = record.classification = "error"
    record.ground_truth_verdict = None
    record.pass_rate = record.pass_rate_interval = None
    record.ground_truth_pass_rate = record.ground_truth_pass_rate_interval = None
    record.unstable = False
    record.agreement = None
    return record


def expected(probe: ProbeCase) -> dict[str, Any] | None:
    expected = (
        probe.expect.model_dump(exclude_none=True, exclude_defaults=True) if probe.expect else {}
    )
    if probe.constraint_check is not None:
        expected["constraint"] = {
            "id": probe.constraint,
            **probe.constraint_check.model_dump(exclude_none=True, exclude_defaults=True),
        }
    return expected or None
