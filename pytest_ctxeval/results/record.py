"""The result record: one per (scenario x strategy x probe x repeat)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["pass", "fail", "error"]
Classification = Literal["ok", "context_loss", "model_miss", "rescued", "divergent", "error"]
Survival = Literal["verbatim", "transformed", "in_store", "gone"]

CLASSIFICATIONS: tuple[str, ...] = (
    "ok",
    "rescued",
    "context_loss",
    "divergent",
    "model_miss",
    "error",
)


class ResultRecord(BaseModel):
    """One line of ``results.jsonl``; field names are a public contract."""

    model_config = ConfigDict(extra="allow")

    run_id: str = ""
    nodeid: str = ""
    scenario: str
    scenario_file: str = ""
    strategy: str
    model: str
    probe: str
    repeat: int = 0
    verdict: Verdict
    classification: Classification
    answer: str | None = None
    ground_truth_answer: str | None = None
    ground_truth_verdict: Verdict | None = None
    expected: dict[str, Any] | None = None
    failed_checks: list[str] = Field(default_factory=list)
    fact_survival: dict[str, Survival] = Field(default_factory=dict)
    prompt_tokens: int = 0
    cumulative_input_tokens: int = 0
    peak_prompt_tokens: int = 0
    full_prompt_tokens: int = 0
    cached_prefix_tokens: int = 0
    turns: int = 0
    cost_usd: float = 0.0
    # cost_usd with the prompt-cache reads a provider would grant discounted.
    cached_cost_usd: float = 0.0
    latency_s: float = 0.0
    llm_calls: int = 0
    # The strategy's own model calls (summaries, sub-agents) and their input
    # tokens, also included in llm_calls and cost_usd.
    strategy_calls: int = 0
    strategy_input_tokens: int = 0
    memory_retrievals: int = 0
    error: str | None = None
    budget: int | None = None
