"""What the evaluator works with: its settings, a probe between preparing and
finishing (``_Pending``) and the shared full-context run (``_Truth``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..llm.cassettes import RecordMode
from ..llm.faults import BREAKER_CALLS
from ..llm.prompt_cache import DEFAULT_SECONDS_PER_REQUEST
from ..results.record import ResultRecord
from ..scenario.build import ProbeCase
from ..strategies.base import Window
from .probe import ProbeAnswer
from .simulate import SessionTrace

RunKey = tuple[str, str, str]  # (scenario file, scenario id, strategy name)


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
