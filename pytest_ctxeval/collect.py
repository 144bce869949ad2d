"""pytest nodes: a scenario file, one run per (scenario x strategy), one item per probe."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .session import SESSION_KEY

if TYPE_CHECKING:
    from .results.record import ResultRecord
    from .scenario.build import Conversation, ProbeCase
    from .strategies.registry import StrategySpec

RECORD_KEY = pytest.StashKey["ResultRecord"]()


class ProbeFailed(Exception):
    """The probe's verdict fails the item under --ctx-fail-on."""

    def __init__(self, record: ResultRecord) -> None:
        super().__init__(record.classification)
        self.record = record


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[pytest.Collector]:
        from .scenario.errors import ScenarioError
        from .scenario.loader import load_conversations

        session = self.config.stash[SESSION_KEY]
        session.collected_scenarios = True
        root = next(
            (d for d in session.options.scenario_dirs if self.path.is_relative_to(d)),
            self.path.parent,
        )
        try:
            conversations = load_conversations(self.path, display_path=self.display_path, root=root)
        except ScenarioError:
            # One bad file is reported, and the other scenarios still run:
            # without this pytest would stop the whole run after collection.
            self.config.option.continue_on_collection_errors = True
            raise
        for conversation in conversations:
            yield ScenarioNode.from_parent(self, name=conversation.id, conversation=conversation)

    @property
    def display_path(self) -> str:
        try:
            return self.path.relative_to(self.config.rootpath).as_posix()
        except ValueError:
            return str(self.path)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .scenario.errors import ScenarioError

        if isinstance(excinfo.value, ScenarioError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ScenarioNode(pytest.Collector):
    """One scenario; its items are its probes under each strategy, named like
    parametrized tests (``probe[strategy]``) so every id can be passed back
    to pytest to re-run one item."""

    def __init__(self, *, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conversation = conversation

    def collect(self) -> Iterator[pytest.Item]:
        strategies = self.config.stash[SESSION_KEY].strategies
        for probe in self.conversation.probes:
            for spec in strategies:
                yield ProbeItem.from_parent(
                    self, name=f"{probe.id}[{spec.name}]", probe=probe, spec=spec
                )


class ProbeItem(pytest.Item):
    def __init__(self, *, probe: ProbeCase, spec: StrategySpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe
        self.spec = spec
        scenario = self.parent
        assert isinstance(scenario, ScenarioNode)
        self.conversation = scenario.conversation
        file = scenario.parent
        assert isinstance(file, ScenarioFile)
        self.source = file.display_path
        for tag in self.conversation.scenario.tags:
            marker = tag.replace("-", "_")
            if marker.isidentifier():
                # Registered first so tags never trip --strict-markers.
                self.config.addinivalue_line("markers", f"{marker}: scenario tag {tag!r}")
                self.add_marker(marker)

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        record = session.evaluator.evaluate(
            self.conversation, self.spec, self.probe, source=self.source
        )
        record.nodeid = self.nodeid
        self.stash[RECORD_KEY] = record
        fail_on = session.options.fail_on
        if fail_on == "never":
            return
        if record.classification == "beyond_context" and record.verdict == "error":
            pytest.skip(f"beyond_context: {record.error}")
        if fail_on == "context_loss" and record.verdict != "pass":
            if record.classification == "model_miss":
                pytest.xfail(
                    f"model_miss: {session.options.model} failed this probe "
                    "even with the full context"
                )
            if record.classification == "unstable":
                pytest.xfail(f"unstable: {_rates(record)}; not credibly a context loss")
        if record.verdict != "pass":
            raise ProbeFailed(record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ProbeFailed):
            return format_failure(excinfo.value.record)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        line = self.conversation.probe_lines.get(self.probe.id)
        # pytest wants a 0-based line here.
        return self.path, (line - 1 if line else None), f"{self.conversation.id}::{self.name}"


def format_failure(record: ResultRecord) -> str:
    lines = [f"{record.classification}: {_explain(record)}"]
    if record.error:
        lines.append(f"error: {record.error}")
    if record.expected is not None:
        lines.append(f"expected:            {json.dumps(record.expected, sort_keys=True)}")
    for check in record.failed_checks:
        lines.append(f"failed check:        {check}")
    lines.append(f"strategy answer:     {_quote(record.answer)}")
    lines.append(f"full-context answer: {_quote(record.ground_truth_answer)}")
    if record.fact_survival:
        facts = ", ".join(f"{k}={v}" for k, v in sorted(record.fact_survival.items()))
        lines.append(f"fact survival:       {facts}")
    lines.append(
        f"prompt tokens:       {record.prompt_tokens:,} "
        f"(full context: {record.full_prompt_tokens:,})"
    )
    return "\n".join(lines)


def _explain(record: ResultRecord) -> str:
    if record.repeat > 1 and record.classification != "error":
        return _rates(record)
    return {
        "context_loss": f"strategy {record.strategy!r} lost what the model needed "
        "(the full-context answer meets the expectation)",
        "model_miss": "the model fails even with the full context",
        "divergent": "the answer differs from the full-context answer (no expectation given)",
        "beyond_context": "the full context does not fit the model's window, so there is no "
        "ground truth; the strategy's answer fails the expectation",
        "error": "the item could not be evaluated",
    }.get(record.classification, record.classification)


def _rates(record: ResultRecord) -> str:
    """``passed 1/5 [0.04, 0.62] under the strategy, 5/5 [...] with the full context``."""

    def rate(value: float | None, interval: tuple[float, float] | None) -> str:
        if value is None:
            return "unscored"
        shown = f"{round(value * record.repeat)}/{record.repeat}"
        return f"{shown} [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else shown

    text = f"passed {rate(record.pass_rate, record.pass_rate_interval)} under the strategy"
    if record.ground_truth_pass_rate is not None:
        full = rate(record.ground_truth_pass_rate, record.ground_truth_pass_rate_interval)
        text += f", {full} with the full context"
    return text


def _quote(text: str | None) -> str:
    if text is None:
        return "(none)"
    text = text if len(text) <= 600 else text[:600] + f"… ({len(text):,} chars)"
    return text.replace("\n", "\n" + " " * 21)
