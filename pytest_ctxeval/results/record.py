"""The result record: one per (scenario x strategy x probe)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..redact import needs_scrub, scrub, scrub_data
from ..textcap import cap_text
from .record_text import record_dumps

# The answer text a record keeps (answer, ground_truth_answer, answers):
# enough to read and to diff, while results.jsonl and the report stay small.
# Scoring saw more (see llm.client.MAX_ANSWER_CHARS); a longer answer ends
# with "… [truncated: N chars]", N its full length.
MAX_RECORD_ANSWER_CHARS = 20_000
# Any other text from outside the run (errors, a judge's reason).
MAX_RECORD_TEXT_CHARS = 4_000

Verdict = Literal["pass", "fail", "error"]
Classification = Literal[
    "ok",
    "context_loss",
    "model_miss",
    "rescued",
    "divergent",
    "unstable",
    "beyond_context",
    "uncheckable",
    "error",
]
Survival = Literal["verbatim", "transformed", "mutated", "in_store", "gone"]

CLASSIFICATIONS: tuple[str, ...] = (
    "ok",
    "rescued",
    "context_loss",
    "divergent",
    "unstable",
    "beyond_context",
    "uncheckable",
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
    # sha256 of the probe's question (16 hex digits): the gate matches a probe
    # whose scenario or probe id was renamed by it ("" when unknown).
    probe_digest: str = ""
    # How many times the probe was asked under the strategy and under the
    # full context (--ctx-repeat); rates and intervals below cover them all.
    repeat: int = 1
    verdict: Verdict
    classification: Classification
    answer: str | None = None
    ground_truth_answer: str | None = None
    ground_truth_verdict: Verdict | None = None
    expected: dict[str, Any] | None = None
    failed_checks: list[str] = Field(default_factory=list)
    fact_survival: dict[str, Survival] = Field(default_factory=dict)
    prompt_tokens: int = 0
    # Which tokenizer counted every token figure of this record: the model's
    # own (gguf:FILE, tokenizer.json:FILE; --ctx-tokenizer) or litellm's
    # choice (tiktoken:ENCODING, huggingface:MODEL).
    tokenizer: str = ""
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
    # The strategy's own model calls (summaries, sub-agents) made to build the
    # probe's window, and their input tokens, also included in llm_calls and
    # cost_usd; the session's are in session_strategy_*.
    strategy_calls: int = 0
    strategy_input_tokens: int = 0
    memory_retrievals: int = 0
    error: str | None = None
    # The token budget the strategy ran at under --ctx-budget; None otherwise.
    budget: int | None = None
    # The user turn the probe was asked as: N+1 after a session of N user
    # turns, earlier at a --ctx-sweep point (see evaluate.sweep).
    probe_turn: int | None = None
    # The constraint the probe checks, if any (the constraint-violation rate counts these).
    constraint: str | None = None
    # The needle the probe asks about, if any.
    needle: str | None = None
    # Fraction of the asks that met the expectation (or agreed with the
    # full-context answer), with its 95 % Wilson interval; None when unscored.
    pass_rate: float | None = None
    pass_rate_interval: tuple[float, float] | None = None
    ground_truth_pass_rate: float | None = None
    ground_truth_pass_rate_interval: tuple[float, float] | None = None
    # Some asks passed and some failed (only possible with --ctx-repeat > 1).
    unstable: bool = False
    # Every answer when the probe was asked more than once.
    answers: list[str | None] | None = None
    ground_truth_answers: list[str | None] | None = None
    # ``uncheckable``: the decoy that met the expectation though it knows
    # nothing of the session, {kind, text} (see evaluate.calibration).
    decoy: dict[str, str] | None = None
    # Why there is no full-context answer (``beyond_context``): it does not fit the model.
    no_ground_truth: str | None = None
    # Without an expectation: how the answers were compared, and the result.
    agreement: float | None = None
    judge: dict[str, Any] | None = None
    # The run: the plugin's version, the tested project's commit (None outside
    # a git checkout) and when the run started (ISO 8601, UTC); see results.run_info.
    plugin_version: str = ""
    git_commit: str | None = None
    started_at: str = ""
    # The strategy's parameters as it ran, defaults included.
    strategy_params: dict[str, Any] = Field(default_factory=dict)
    # The run's configuration, so `ctxeval merge` can tell that shards belong
    # together: the --ctx-shard it ran ("2/3", None unsharded), the strategies
    # it ran, and sha256 (16 hex digits) of the scenario's file.
    shard: str | None = None
    run_strategies: list[str] = Field(default_factory=list)
    scenario_digest: str = ""
    # A name --ctx-strategy and `ctxeval show --strategy` accept for the
    # strategy: its module:Class where its class names itself ("" when unknown).
    strategy_ref: str = ""
    # The scenario's tags, for filtering the report.
    tags: list[str] = Field(default_factory=list)
    # The depth (0..1 of the session's tokens) of the needle the probe asks
    # about, when it was planted at a depth; ``turns`` is the session's length.
    needle_depth: float | None = None
    # The needles the scenario cites as the evidence for this probe's answer;
    # their states are in ``fact_survival``.
    evidence: list[str] = Field(default_factory=list)
    # Prompt tokens of each model call of the simulated session, in order.
    session_prompt_tokens: list[int] = Field(default_factory=list)
    # -- Per session: the same in every record of one scenario x strategy
    # (x budget).  Sum them once per session, never per record (see
    # results.analysis.task_costs); docs/costs.md has the cost model.
    # Input tokens of the simulated requests (the probe's not included), the
    # session's assistant messages as their output, what the prompt cache
    # read and wrote, and cached / input tokens over those requests.
    session_input_tokens: int = 0
    session_output_tokens: int = 0
    session_cached_tokens: int = 0
    session_cache_write_tokens: int = 0
    session_cache_hit_ratio: float | None = None
    # The simulated requests priced, plus the strategy's own calls in the
    # session; without and with the prompt cache.
    session_cost_usd: float = 0.0
    session_cached_cost_usd: float = 0.0
    # The strategy's own model calls while the session ran (summaries, sub-agents).
    session_strategy_calls: int = 0
    session_strategy_input_tokens: int = 0
    session_strategy_cost_usd: float = 0.0
    # The prompt-cache rules applied ("openai", "anthropic", "anthropic-auto";
    # see llm.cache_rules),
    # the requests that broke the cached prefix (the first MAX_BREAKS, each
    # {request, message, reason}) and how many did in all.
    cache_model: str = ""
    cache_breaks: list[dict[str, Any]] = Field(default_factory=list)
    cache_break_count: int = 0
    # Per model call of the session, in order, one list per name in
    # evaluate.session_ledger.SERIES (prompt tokens are session_prompt_tokens;
    # a series left out is all zeros).
    session_requests: dict[str, list[int]] = Field(default_factory=dict)
    # -- Per probe: cost_usd, cached_cost_usd, llm_calls, strategy_calls and
    # strategy_input_tokens count this probe's asks and the strategy calls made
    # to build its window, not the session's.  What the prompt cache would
    # read and write for the probe's request, after the session's requests.
    probe_cached_tokens: int = 0
    probe_cache_write_tokens: int = 0
    # Input tokens of every request the probe's asks made: each ask (with
    # --ctx-repeat) and each retrieval turn of it (cumulative_input_tokens
    # holds the first ask's only).
    probe_input_tokens: int = 0
    # The window the strategy sent at the probe, each part marked kept,
    # shortened, pruned, summary, dropped or tools (see evaluate.window_trace).
    window_trace: list[dict[str, Any]] = Field(default_factory=list)
    # The tool calls the strategy answered while the model answered the probe
    # (first ask): tool, arguments, and the text returned, capped.
    retrievals: list[dict[str, Any]] = Field(default_factory=list)


def own_fact_survival(record: ResultRecord) -> dict[str, str]:
    """The states of the facts the probe is about: its needle, its
    constraint and the evidence it cites (``fact_survival`` has every fact of
    the session: hundreds on a LoCoMo-size scenario).  What the baseline and
    the --junitxml properties keep of it."""
    states = record.fact_survival
    about = (record.needle, record.constraint, *record.evidence)
    return {fact: states[fact] for fact in about if fact is not None and fact in states}


def sealed(record: ResultRecord) -> ResultRecord:
    """``record`` as it may be stored and shown: every string scrubbed of
    secrets (see ``redact``) and the answer texts and errors capped."""
    data = record_data(record)
    for name in ("answer", "ground_truth_answer"):
        data[name] = cap_text(data[name], MAX_RECORD_ANSWER_CHARS)
    for name in ("answers", "ground_truth_answers"):
        if data[name] is not None:
            data[name] = [cap_text(a, MAX_RECORD_ANSWER_CHARS) for a in data[name]]
    for name in ("error", "no_ground_truth"):
        data[name] = cap_text(data[name], MAX_RECORD_TEXT_CHARS)
    data["failed_checks"] = [cap_text(c, MAX_RECORD_TEXT_CHARS) for c in data["failed_checks"]]
    if data["judge"] is not None and isinstance(data["judge"].get("reason"), str):
        reason = cap_text(data["judge"]["reason"], MAX_RECORD_TEXT_CHARS)
        data["judge"] = {**data["judge"], "reason": reason}  # the record's own dict stays as it is
    if needs_scrub(data, encode=record_dumps):
        data = scrub_data(data)
    # Errors quote servers and exceptions: keys there go by their shape too.
    for name in ("error", "no_ground_truth"):
        if isinstance(data[name], str):
            data[name] = scrub(data[name])
    data["failed_checks"] = [scrub(c) for c in data["failed_checks"]]
    return ResultRecord.model_validate(data)


def record_data(record: ResultRecord) -> dict[str, Any]:
    """The record's fields and extras as a dict, its values the record's own
    objects (not copies): a record is a few thousand values (its window trace,
    its fact ledger), and dumping it through pydantic copies every one of
    them.  Callers read it, or build new values; none changes it in place."""
    return {**record.__dict__, **(record.__pydantic_extra__ or {})}
