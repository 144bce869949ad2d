"""pytest nodes: a scenario file, one run per (scenario x strategy), one item per probe."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .failure_text import format_failure, one_line_failure, rates
from .kept_objects import fewer_young_passes
from .live.options import wants_blocks
from .report.terminal_text import printable
from .session import SESSION_KEY

if TYPE_CHECKING:
    from .results.record import ResultRecord
    from .scenario.build import Conversation, ProbeCase
    from .scenario.errors import ScenarioError
    from .strategies.registry import StrategySpec
    from .xdist_collect import SharedParsing

RECORD_KEY = pytest.StashKey["ResultRecord"]()
# Under xdist: the parsing this worker shares with the others (see xdist_collect).
SHARED_PARSING_KEY: pytest.StashKey[SharedParsing] = pytest.StashKey()
# The collect report attribute that carries a problem with the run's settings
# (a bad --ctx-strategy, an unknown model) from a scenario file to the controller.
USAGE_ERROR_ATTR = "ctxeval_usage_error"

# Markers pytest and xdist act on: a tag with one of these names would skip,
# xfail or regroup the scenario's items instead of just labelling them.
ACTING_MARKERS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "xdist_group"}
)
RENAMED_TAG_PREFIX = "tag_"


class ProbeFailed(Exception):
    """The probe's verdict fails the item under --ctx-fail-on, or the gate
    found it regressed against the baseline (``reason`` says so)."""

    def __init__(self, record: ResultRecord, reason: str = "") -> None:
        super().__init__(record.classification)
        self.record = record
        self.reason = reason


class ScenarioFile(pytest.File):
    # A problem with the run's settings found while collecting this file.
    usage_error: str | None = None
    # In the default scenarios folder, a YAML file is a scenario file only if
    # it looks like one (see scenario_files.looks_like_scenario_file).
    only_if_it_looks_like_one = False

    def collect(self) -> Iterator[pytest.Collector]:
        from .scenario.errors import ScenarioError

        loaded: list[Conversation] | ScenarioError | None = None
        if self.only_if_it_looks_like_one:
            loaded = self._loaded()
            if loaded is None:
                return  # YAML that is not a scenario leaves the run as it is
        session = self.config.stash[SESSION_KEY]
        try:
            session.prepare_collection()
        except pytest.UsageError as exc:
            # Raised here it is this file's collection error; the plugin turns
            # it into the run's usage error (see plugin.ControllerHooks).
            self.usage_error = str(exc)
            raise
        if loaded is None:
            loaded = self._loaded()
        if isinstance(loaded, ScenarioError):
            # One bad file is reported, and the other scenarios still run:
            # without this pytest would stop the whole run after collection.
            self.config.option.continue_on_collection_errors = True
            raise loaded
        for conversation in loaded or ():
            yield ScenarioNode.from_parent(self, name=conversation.id, conversation=conversation)

    def _loaded(self) -> list[Conversation] | ScenarioError | None:
        """``parse()``'s scenarios or problem, parsed here or, under xdist,
        by whichever worker claimed the file."""
        from .scenario.errors import ScenarioError

        shared = self.config.stash.get(SHARED_PARSING_KEY, None)
        try:
            with fewer_young_passes():
                if shared is None:
                    return self.parse()
                return shared.conversations(self.path, self.parse)
        except ScenarioError as problem:
            return problem

    def parse(self) -> list[Conversation] | None:
        """Load, validate and build the file's scenarios (ScenarioError for
        its problems); None when it does not look like a scenario file and
        only would be one if it did."""
        from .scenario.errors import NotAScenario, ScenarioError
        from .scenario.loader import load_conversations
        from .scenario_files import is_scenario_root, looks_like_scenario_file

        options = self.config.stash[SESSION_KEY].options
        root = next(
            (d for d in options.scenario_dirs if self.path.is_relative_to(d)), self.path.parent
        )
        if not self.only_if_it_looks_like_one:
            return load_conversations(self.path, display_path=self.display_path, root=root)
        # One composing of the file both decides and loads; a file that cannot
        # be loaded is reported only if it looks like a scenario file.
        try:
            return load_conversations(
                self.path, display_path=self.display_path, root=root, only_if=is_scenario_root
            )
        except NotAScenario:
            return None
        except ScenarioError:
            if looks_like_scenario_file(self.path):
                raise
            return None

    @property
    def display_path(self) -> str:
        try:
            return self.path.relative_to(self.config.rootpath).as_posix()
        except ValueError:
            return str(self.path)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .scenario.errors import ScenarioError

        if isinstance(excinfo.value, (ScenarioError, pytest.UsageError)):
            return printable(str(excinfo.value))
        return super().repr_failure(excinfo)


class ScenarioNode(pytest.Collector):
    """One scenario; its items are its probes under each strategy, named and
    identified like parametrized tests (``probe[strategy]``, the strategy as
    the parameter), so every id can be passed back to pytest to re-run one
    item, and --lf, --ff, --sw and -k find the items they remember."""

    def __init__(self, *, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conversation = conversation

    def collect(self) -> Iterator[pytest.Item]:
        session = self.config.stash[SESSION_KEY]
        strategies = session.strategies
        from .evaluate.rollout.script import rollout_cases  # rollout: one item per strategy

        cases = rollout_cases(self.conversation, session.options.mode)
        for probe in self._probes(session.options.sweep_every) if cases is None else cases:
            for spec in strategies:
                yield ProbeItem.from_parent(
                    self,
                    name=f"{probe.id}[{spec.name}]",
                    nodeid=_parametrized_id(self, probe.id, spec.name),
                    probe=probe,
                    spec=spec,
                )

    def _probes(self, sweep_every: int | None) -> list[ProbeCase]:
        """The probes, each after its --ctx-sweep points (``probe@turn-4``), earliest first."""
        if not sweep_every:
            return list(self.conversation.probes)
        from .evaluate.sweep import sweep_probes

        swept = sweep_probes(self.conversation, sweep_every)
        return [
            case
            for probe in self.conversation.probes
            for case in [*(s for s in swept if s.base_id == probe.id), probe]
        ]


def _parametrized_id(parent: pytest.Collector, name: str, param: str) -> Any:
    """The structured id of a parametrized item, ``name`` with ``param``.

    pytest 9 compares ids by path, names and parameter; the id it would build
    from the name alone keeps ``[strategy]`` in the name, so it never equals
    the one it reads back from its cache (--lf, --ff, --sw) or from a
    report.  Earlier pytest builds the string id from the name itself: None."""
    parent_id = getattr(parent, "id", None)
    if parent_id is None or not hasattr(parent_id, "with_params"):
        return None
    return parent_id.child(name).with_params(param)


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
            marker = register_tag(self.config, tag)
            if marker is not None:
                self.add_marker(marker)

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        with fewer_young_passes():
            evaluated = session.evaluator.evaluate(
                self.conversation, self.spec, self.probe, source=self.source
            )
        record = self.stamped(evaluated)
        self.stash[RECORD_KEY] = record
        if not hasattr(self.config, "workerinput"):
            # An xdist worker leaves them to the controller, which makes them
            # from the record it receives: sent, they would double the size of
            # the item's call and teardown reports.
            self.user_properties.extend(junit_properties(record))
        stop = session.evaluator.stop_reason
        if stop is not None:  # this item keeps its record; none after it runs
            self.session.shouldstop = printable(stop)
        if session.gate is not None:
            self._end_under_gate(session.gate.decide(record), record)
            return
        fail_on = session.options.fail_on
        if fail_on == "never":
            return
        if record.classification == "beyond_context" and record.verdict == "error":
            pytest.skip(printable(f"beyond_context: {record.error}"))
        if record.classification == "uncheckable":
            pytest.skip(printable(uncheckable_reason(record)))
        if fail_on == "context_loss" and record.verdict != "pass":
            if record.classification == "model_miss":
                pytest.xfail(
                    printable(
                        f"model_miss: {session.options.model} failed this probe "
                        "even with the full context"
                    )
                )
            if record.classification == "unstable":
                pytest.xfail(f"unstable: {rates(record)}; not credibly a context loss")
        if record.verdict != "pass":
            raise ProbeFailed(record)

    def stamped(self, record: ResultRecord) -> ResultRecord:
        """``record`` with what only the item knows: its node id, its file's
        digest and how its strategy resolves."""
        session = self.config.stash[SESSION_KEY]
        record.nodeid = self.nodeid
        record.scenario_digest = file_digest(self.path)
        # Here, not on the controller: under xdist only the workers resolve strategies.
        record.strategy_ref = self.spec.resolvable
        record.run_strategies = sorted(spec.name for spec in session.strategies)
        if session.options.budgets:
            record.budget = self.spec.params.get("budget_tokens")
        return record

    def finished_before_interrupt(self) -> ResultRecord | None:
        """After Ctrl-C, for an item that did not report: its record, when an
        earlier item's batch had all of its answers back."""
        session = self.config.stash[SESSION_KEY]
        if session.has_evaluator:
            record = session.evaluator.finished_before_interrupt(
                self.conversation, self.spec, self.probe, source=self.source
            )
            if record is not None:
                return self.stamped(record)
        return None

    def _end_under_gate(self, decision: tuple[str, str], record: ResultRecord) -> None:
        """With a baseline only a regression (or an error) fails the item."""
        outcome, reason = decision
        if outcome == "fail":
            raise ProbeFailed(record, reason)
        if outcome == "xfail":
            pytest.xfail(printable(reason))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ProbeFailed):
            record, reason = excinfo.value.record, excinfo.value.reason
            if not wants_blocks(self.config):  # one line each, unless -v or --ctx-verbose
                return one_line_failure(record, reason)
            failure = format_failure(record)
            return f"{printable(reason)}\n{failure}" if reason else failure
        if isinstance(excinfo.value, pytest.xfail.Exception):
            # pytest shows an xfail's reason, never this text; its traceback
            # would repr every frame's arguments (a whole long conversation).
            return printable(str(excinfo.value))
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # A sweep point (probe@turn-4) is reported at its probe's line.
        line = self.conversation.probe_lines.get(getattr(self.probe, "base_id", self.probe.id))
        # The domain heads the item's failure report.  It must not end the
        # node id: -v shows an id that ends with its domain with every "."
        # before the "[" turned into "::", so recall-depth-0.9 would read
        # recall-depth-0::9 and could not be pasted back.
        where = f"{self.source}:{line}" if line else self.source
        domain = f"{self.conversation.id}::{self.name} ({where})"
        # pytest wants a 0-based line here.
        return self.path, (line - 1 if line else None), domain


@lru_cache(maxsize=1024)
def file_digest(path: Path) -> str:
    """sha256 of a scenario file (16 hex digits): shards of one run agree on it."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return ""


def register_tag(config: pytest.Config, tag: str) -> str | None:
    """The marker a scenario tag becomes, registered on first use so tags
    never trip --strict-markers; None when the tag cannot be a marker."""
    marker = tag_marker(tag)
    if marker is None:
        return None
    name, description = marker
    registered = config.stash[SESSION_KEY].registered_markers
    if name not in registered:
        config.addinivalue_line("markers", f"{name}: {description}")
        registered.add(name)
    return name


def tag_marker(tag: str) -> tuple[str, str] | None:
    """The marker a scenario tag becomes, with its description; None when the
    tag cannot be a marker name.  A tag named like a marker pytest acts on
    (skip, xfail, ...) is prefixed, so it labels the items and changes nothing."""
    name = tag.replace("-", "_")
    if not name.isidentifier():
        return None
    if name in ACTING_MARKERS:
        return (
            RENAMED_TAG_PREFIX + name,
            f"scenario tag {tag!r}, renamed: a {name!r} marker would change how pytest "
            f"runs the items (select them with -m {RENAMED_TAG_PREFIX}{name})",
        )
    return name, f"scenario tag {tag!r}"


def junit_properties(record: ResultRecord) -> list[tuple[str, object]]:
    """What --junitxml writes as the test case's properties; fact survival
    of the facts the probe is about."""
    from .results.record import own_fact_survival

    own = own_fact_survival(record)
    survival = ",".join(f"{fact}={state}" for fact, state in sorted(own.items()))
    return [
        ("ctxeval.classification", record.classification),
        ("ctxeval.verdict", record.verdict),
        ("ctxeval.strategy", record.strategy),
        ("ctxeval.prompt_tokens", record.prompt_tokens),
        ("ctxeval.cumulative_input_tokens", record.cumulative_input_tokens),
        ("ctxeval.cost_usd", f"{record.cost_usd:.6f}"),
        ("ctxeval.fact_survival", survival),
    ]


def uncheckable_reason(record: ResultRecord) -> str:
    """Why an uncheckable item gave no verdict, naming the decoy."""
    decoy = record.decoy or {}
    return (
        f"uncheckable: the {decoy.get('kind', 'decoy')} {decoy.get('text', '')!r} meets the "
        "expectation though it knows nothing of the session, so the probe measures nothing "
        "(not asked)"
    )
