"""The run's ctxeval settings, read once from the options and the ini
(the option wins over the ini)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from . import values
from .gate_options import gate_options
from .table import DEFAULT_SCENARIO_DIR, MOCK_MODEL_PREFIX, OPTIONS

if TYPE_CHECKING:
    from ..gate.ledger_rules import LedgerRule
    from ..gate.rules import Rule
    from ..output_paths import OutputPath


@dataclass(frozen=True)
class CtxOptions:
    strategies: str
    model: str
    api_base: str | None
    report: Path
    results: Path
    fail_on: str
    scenario_dirs: tuple[Path, ...]
    # The ini names the scenario directories: every YAML file there is a scenario.
    scenario_dirs_declared: bool = False
    cassettes: Path = Path("reports/cassettes")
    record: str = "new"
    concurrency: int = 8
    repeat: int = 1
    agreement: float = 0.6
    judge: str | None = None
    context_window: int | None = None
    max_tokens: int = 1024
    timeout: float = 300.0
    # --ctx-breaker: calls in a row that time out or cannot connect before the rest fail at once.
    breaker: int = 3
    baseline: Path | None = None
    update_baseline: bool = False
    # --ctx-allow-removed: baseline probes that match nothing do not fail the gate.
    allow_removed: bool = False
    fail_if: tuple[Rule, ...] = ()
    # --ctx-fail-if's fact-ledger rules (``mutated:>0``), checked without a baseline.
    ledger_rules: tuple[LedgerRule, ...] = ()
    shard: tuple[int, int] | None = None
    summary: Path | None = None
    # --ctx-sweep: ask every probe at every this-many-th user turn too; None = off.
    sweep_every: int | None = None
    # --ctx-budget: the budgets (ascending) each budgeted strategy runs at; () = off.
    budgets: tuple[int, ...] = ()
    # Prompt-cache rules by name (None: the model's provider's), and the
    # simulated time between requests.
    cache_model: str | None = None
    seconds_per_turn: float = 30.0
    # --ctx-tokenizer: the model's own tokenizer file; None = litellm's.
    tokenizer: Path | None = None
    # --ctx-mode: replay or rollout for every scenario; None = each scenario's own.
    mode: str | None = None

    @property
    def gated(self) -> bool:
        return self.baseline is not None

    @classmethod
    def from_config(cls, config: pytest.Config) -> CtxOptions:
        def get(dest: str) -> str | None:
            value = config.getoption(dest)
            if value is None:
                value = config.getini(dest)
            return value or None

        root = config.rootpath
        invocation = config.invocation_params.dir
        # pytest before 8 gives [] for an unset list: an empty setting counts as unset.
        declared_dirs: list[str] | None = config.getini("ctx_scenario_dirs") or None
        dirs = [DEFAULT_SCENARIO_DIR] if declared_dirs is None else declared_dirs

        def output_path(dest: str) -> Path:
            # A path given on the command line is relative to where pytest ran;
            # one from the ini file is relative to the project root.
            value = get(dest) or OPTIONS[dest][2] or ""
            base = invocation if config.getoption(dest) else root
            # Absolute but not resolved: a symbolic link on the way must be
            # seen (and refused, see output_paths), not silently followed.
            return Path(os.path.normpath(os.path.abspath(base / value)))

        return cls(
            strategies=get("ctx_strategy") or "all",
            model=get("ctx_model") or "ctxeval/oracle",
            api_base=get("ctx_api_base"),
            report=output_path("ctx_report"),
            results=output_path("ctx_results"),
            fail_on=values.fail_on(get("ctx_fail_on") or "context_loss"),
            scenario_dirs=tuple((root / d).resolve() for d in dirs),
            scenario_dirs_declared=declared_dirs is not None,
            cassettes=output_path("ctx_cassettes"),
            record=values.record_mode(get("ctx_record") or "new"),
            concurrency=values.at_least_one("--ctx-concurrency", get("ctx_concurrency") or "8"),
            repeat=values.at_least_one("--ctx-repeat", get("ctx_repeat") or "1"),
            agreement=values.agreement(get("ctx_agreement") or "0.6"),
            judge=get("ctx_judge"),
            context_window=values.context_window(get("ctx_context_window")),
            max_tokens=values.at_least_one("--ctx-max-tokens", get("ctx_max_tokens") or "1024"),
            timeout=values.seconds(get("ctx_timeout") or "300"),
            breaker=values.breaker(get("ctx_breaker") or "3"),
            sweep_every=values.sweep(get("ctx_sweep")),
            budgets=values.budgets(get("ctx_budget")),
            cache_model=values.cache_model(get("ctx_cache_model")),
            seconds_per_turn=values.seconds_per_turn(get("ctx_seconds_per_turn") or "30"),
            tokenizer=values.tokenizer_file(
                get("ctx_tokenizer"), invocation if config.getoption("ctx_tokenizer") else root
            ),
            mode=values.mode(get("ctx_mode")),
            **gate_options(config, get, output_path),
        )

    @property
    def writes_cassettes(self) -> bool:
        """Whether a model answer may be recorded: a mock's never is, and
        replaying (--ctx-record=none) only reads."""
        real = [m for m in (self.model, self.judge) if m and not m.startswith(MOCK_MODEL_PREFIX)]
        return bool(real) and self.record != "none"

    def output_paths(self) -> list[OutputPath]:
        """Where the run writes, with the option that says so."""
        from ..output_paths import OutputPath

        outputs = [
            OutputPath("--ctx-results", self.results, "file"),
            OutputPath("--ctx-report", self.report, "file"),
        ]
        if self.baseline is not None and self.update_baseline:
            outputs.append(OutputPath("--ctx-baseline", self.baseline, "file"))
        if self.summary is not None:
            outputs.append(OutputPath("--ctx-summary", self.summary, "file"))
        if self.writes_cassettes:
            outputs.append(OutputPath("--ctx-cassettes", self.cassettes, "directory"))
        return outputs
