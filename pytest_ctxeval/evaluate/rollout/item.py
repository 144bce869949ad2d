"""One rollout item's record: the strategy's rollout beside the ``full``
shadow's on the same user turns (the shadow runs once per scenario and is
shared by every strategy), scored turn by turn.

Classification, as for a probe: ``ok`` when the strategy broke no check,
``context_loss`` when it broke a check on a turn where the shadow kept that
check, ``model_miss`` when every check it broke the shadow broke on that
turn too, ``rescued`` when only the shadow broke some; ``error`` when a
rollout ended early (a runaway, a model fault, a strategy that raised)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...llm.client import ModelClient
from ...llm.tokens import tokenizer_name
from ...results.record import ResultRecord
from ...results.run_info import plain, strategy_params
from ...scenario.build import Conversation
from ...strategies.registry import StrategySpec, resolve
from ..agreement import ask_judge
from ..ledger import FactLedger, put_ledger
from .checks import (
    Judge,
    TurnChecks,
    artifact_diff,
    check_rollout,
    divergence_turn,
    turn_agreement,
    violation_stats,
)
from .loop import Rollout, RolloutSetup, run_rollout
from .script import ROLLOUT_ID, RolloutScript, rollout_script, rollout_spec
from .stubs import recorded_outputs

SHADOW = "full"


@dataclass
class RolloutRunner:
    client: ModelClient
    model: str
    agreement_threshold: float = 0.6
    # --ctx-judge: decides where a rollout diverges from its shadow, instead of token F1.
    judge_client: ModelClient | None = None
    _shadows: dict[tuple[str, str], Rollout] = field(default_factory=dict)

    def record(self, conversation: Conversation, spec: StrategySpec, source: str) -> ResultRecord:
        record = ResultRecord(
            scenario=conversation.id,
            scenario_file=source,
            strategy=spec.name,
            model=self.model,
            tokenizer=tokenizer_name(self.model),
            probe=ROLLOUT_ID,
            verdict="error",
            classification="error",
            strategy_params=plain(spec.params),
            tags=list(conversation.scenario.tags),
        )
        # Rollout-only fields are extras: replay records stay as they were.
        setattr(record, "mode", "rollout")  # noqa: B010
        try:
            script = rollout_script(conversation)
        except ValueError as exc:
            record.error = f"{source}: rollout: {exc}"
            return record
        record.turns = len(script.turns)
        key = (source, conversation.id)
        if spec.name == SHADOW and key not in self._shadows:
            self._shadows[key] = self._run(conversation, script, spec)
        if key not in self._shadows:
            self._shadows[key] = self._run(conversation, script, resolve(SHADOW)[0])
        shadow = self._shadows[key]
        mine = shadow if spec.name == SHADOW else self._run(conversation, script, spec)
        try:
            record.strategy_params = strategy_params(spec, spec.create())
        except Exception:  # its rollout already reported what the strategy raised
            pass
        fill_record(
            record,
            conversation,
            script,
            mine,
            shadow,
            self.agreement_threshold,
            self._judge(record),
        )
        return record

    def _judge(self, record: ResultRecord) -> Judge | None:
        judge = self.judge_client
        if judge is None:
            return None

        def agrees(question: str, answer: str, reference: str) -> bool:
            result = ask_judge(judge, record, question, answer, reference)
            record.llm_calls += 1
            record.cost_usd += result.cost_usd
            return result.agrees or result.error is not None  # no verdict is no divergence

        return agrees

    def _run(
        self, conversation: Conversation, script: RolloutScript, spec: StrategySpec
    ) -> Rollout:
        settings = rollout_spec(conversation)
        setup = RolloutSetup(
            self.client,
            self.model,
            conversation.id,
            list(settings.tools),
            settings.max_tool_rounds,
            recorded_outputs(conversation.messages),
        )
        ledger = FactLedger(list(conversation.facts), dict(conversation.coincidental_answers))
        try:
            strategy = spec.create()
        except Exception as exc:
            return Rollout(spec.name, error=f"strategy {spec.name!r} raised {exc}", ledger=ledger)
        return run_rollout(script, strategy, spec.name, setup, ledger)


def fill_record(
    record: ResultRecord,
    conversation: Conversation,
    script: RolloutScript,
    mine: Rollout,
    shadow: Rollout,
    threshold: float,
    judge: Judge | None = None,
) -> None:
    extra: dict[str, Any] = {}
    record.answer = _last_answer(mine)
    record.ground_truth_answer = _last_answer(shadow)
    record.llm_calls = mine.llm_calls
    record.strategy_calls = mine.strategy_calls
    record.cost_usd = mine.cost_usd
    record.latency_s = round(mine.latency_s, 6)
    tokens = mine.request_tokens
    record.session_prompt_tokens = tokens
    record.cumulative_input_tokens = sum(tokens)
    record.peak_prompt_tokens = max(tokens, default=0)
    record.prompt_tokens = tokens[-1] if tokens else 0
    record.full_prompt_tokens = shadow.request_tokens[-1] if shadow.request_tokens else 0
    ledger = mine.ledger
    if ledger is not None:
        put_ledger(record, ledger)
        # The state after the last request, as fact survival gives it at a probe.
        last: dict[str, Any] = {fact: runs[-1][0] for fact, runs in ledger.runs.items() if runs}
        record.fact_survival = last
    mine_checks = check_rollout(conversation, script, mine)
    shadow_checks = check_rollout(conversation, script, shadow)
    ours, theirs = violation_stats(mine_checks), violation_stats(shadow_checks)
    extra.update(
        rollout_turns=len(mine.turns),
        violation_rate=ours.rate,
        violating_turns=ours.violating_turns,
        checked_turns=ours.checked_turns,
        first_violation_turn=ours.first_violation_turn,
        shadow_violation_rate=theirs.rate,
        shadow_violating_turns=theirs.violating_turns,
        shadow_checked_turns=theirs.checked_turns,
        shadow_first_violation_turn=theirs.first_violation_turn,
        divergence_turn=divergence_turn(
            mine,
            shadow,
            threshold,
            (mine_checks, shadow_checks),
            (script, judge) if judge is not None else None,
        ),
        artifact_diff=artifact_diff(mine, shadow),
        artifact_files=sorted(mine.files),
        rollout_timeline=timeline(mine_checks, shadow_checks, turn_agreement(mine, shadow)),
    )
    for name, value in extra.items():
        setattr(record, name, value)
    record.failed_checks = [
        f"turn {c.turn}: {name}: {'; '.join(failed)}"
        for c in mine_checks
        for name, failed in sorted(c.broken.items())
    ]
    if mine.error is not None:
        record.error = f"the rollout under {mine.strategy!r} ended at {mine.error}"
        return
    if shadow.error is not None:
        record.error = f"the full-context shadow rollout ended at {shadow.error}"
        return
    record.verdict, record.classification = _classify(mine_checks, shadow_checks)
    record.ground_truth_verdict = "fail" if any(c.broken for c in shadow_checks) else "pass"


def _classify(mine: list[TurnChecks], shadow: list[TurnChecks]) -> tuple[Any, Any]:
    broken = {(c.turn, name) for c in mine for name in c.broken}
    theirs = {(c.turn, name) for c in shadow for name in c.broken}
    if not broken:
        return "pass", ("rescued" if theirs else "ok")
    if broken - theirs:
        return "fail", "context_loss"
    return "fail", "model_miss"


def timeline(
    mine: list[TurnChecks], shadow: list[TurnChecks], agree: dict[int, float]
) -> list[dict[str, Any]]:
    """Per turn: the checks applied, those broken under the strategy and
    under the shadow, and how far the two turns agree (token F1)."""
    theirs = {c.turn: c for c in shadow}
    rows = []
    for c in mine:
        other = theirs.get(c.turn)
        rows.append(
            {
                "turn": c.turn,
                "checked": c.checked,
                "broken": sorted(c.broken),
                "shadow_broken": sorted(other.broken) if other is not None else [],
                "agreement": agree.get(c.turn),
            }
        )
    return rows


def _last_answer(rollout: Rollout) -> str | None:
    return next((t.answer for t in reversed(rollout.turns) if t.answer is not None), None)
