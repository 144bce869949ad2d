"""The run's state for the plugin: options, strategies, the evaluator and
the records gathered on the controller."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pytest

from .options import CtxOptions

if TYPE_CHECKING:
    from .evaluate.runner import Evaluator
    from .results.record import ResultRecord
    from .results.store import ResultWriter
    from .strategies.registry import StrategySpec

SESSION_KEY = pytest.StashKey["CtxSession"]()


@dataclass
class CtxSession:
    options: CtxOptions
    strategies: list[StrategySpec]
    run_id: str = field(
        default_factory=lambda: (
            datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]
        )
    )
    records: list[ResultRecord] = field(default_factory=list)
    collected_scenarios: bool = False
    _evaluator: Evaluator | None = None
    _writer: ResultWriter | None = None
    # Selected probe ids per (scenario file, scenario, strategy): see note_selection.
    selection: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    batch_runs: bool = True

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            from .evaluate.runner import EvalSettings, Evaluator

            options = self.options
            self._evaluator = Evaluator(
                EvalSettings(
                    model=options.model,
                    api_base=options.api_base,
                    cassette_dir=options.cassettes,
                    record=options.record,  # type: ignore[arg-type]
                    concurrency=options.concurrency if self.batch_runs else 1,
                    repeat=options.repeat,
                    agreement_threshold=options.agreement,
                    judge=options.judge,
                    context_window=options.context_window,
                    max_tokens=options.max_tokens,
                    deadline_s=options.timeout,
                ),
                selection=self.selection,
            )
        return self._evaluator

    def note_selection(self, items: list[pytest.Item], *, runs_stay_together: bool) -> None:
        """Remember the selected probes of each run: the evaluator asks the model
        for them together, and a probe deselected with -k or -m costs no call.

        Under xdist's default distribution the probes of one run may go to
        different workers; asking for all of them in each would pay twice, so
        then every item asks for itself and the worker processes are the
        parallelism (``--dist loadscope`` keeps a run on one worker)."""
        from .collect import ProbeItem

        self.batch_runs = runs_stay_together
        self.selection.clear()
        for item in items:
            if isinstance(item, ProbeItem):
                run = (item.source, item.conversation.id, item.spec.name)
                self.selection.setdefault(run, set()).add(item.probe.id)

    def check_model(self) -> None:
        """An unknown model is a usage error, found before anything runs."""
        from .llm.models import describe_unknown_model

        problem = describe_unknown_model(self.options.model, self.options.api_base)
        if problem:
            raise pytest.UsageError(f"--ctx-model: {problem}")

    def add_record(self, payload: str) -> ResultRecord:
        """Controller side: keep and persist one finished item's record."""
        from .results.record import ResultRecord
        from .results.store import ResultWriter

        record = ResultRecord.model_validate_json(payload)
        record.run_id = self.run_id
        if self._writer is None:
            self._writer = ResultWriter(self.options.results)
        self._writer.write(record)
        self.records.append(record)
        return record

    def finish(self) -> dict[str, Any]:
        """Close the results file and write the report; returns what was written."""
        written: dict[str, Any] = {}
        if self._writer is not None:
            self._writer.close()
            written["results"] = self.options.results
        if self.records or self.collected_scenarios:
            from .report.html import write_report

            write_report(
                self.options.report,
                self.records,
                run_info={
                    "run_id": self.run_id,
                    "model": self.options.model,
                    "strategies": ", ".join(s.name for s in self.strategies),
                },
            )
            written["report"] = self.options.report
        return written
