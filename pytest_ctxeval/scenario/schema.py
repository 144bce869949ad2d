"""Scenario format v1 as pydantic models.

Unknown keys are errors everywhere (``extra="forbid"``), so a typo in a
scenario is reported instead of silently ignored.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from .generators import GenerateSpec
from .rollout_spec import Mode, RolloutSpec
from .schema_base import DEFAULT_F1_THRESHOLD as DEFAULT_F1_THRESHOLD
from .schema_base import SLUG as SLUG
from .schema_base import LocatedValueError as LocatedValueError
from .schema_base import Strict as Strict
from .schema_base import _guess
from .schema_checks import Constraint as Constraint
from .schema_checks import ConstraintPart as ConstraintPart
from .schema_checks import Expectation as Expectation
from .schema_checks import Needle as Needle
from .schema_checks import PythonCheck as PythonCheck


class ToolCallSpec(Strict):
    id: str | None = Field(default=None, description="call id (default: call_1, call_2, ...)")
    name: str = Field(description="the function the assistant calls")
    args: dict[str, Any] = Field(default_factory=dict, description="its arguments")


class ToolOutput(Strict):
    name: str = Field(description="the tool that produced the output")
    args: dict[str, Any] = Field(
        default_factory=dict, description="arguments of the call (synthesised if none is pending)"
    )
    output: str | None = Field(default=None, description="the tool's output text")
    generate: GenerateSpec | None = Field(default=None, description="generated output instead")

    @model_validator(mode="after")
    def _one_source(self) -> ToolOutput:
        if (self.output is None) == (self.generate is None):
            raise ValueError("a tool turn needs exactly one of 'output' or 'generate'")
        return self


class UserTurn(Strict):
    user: str = Field(description="a user message")


class AssistantTurn(Strict):
    assistant: str | None = Field(default=None, description="an assistant message")
    tool_calls: list[ToolCallSpec] = Field(
        default_factory=list, description="calls whose results follow as tool turns"
    )


class ToolTurn(Strict):
    tool: ToolOutput = Field(description="a tool result")


class GenerateTurn(Strict):
    generate: GenerateSpec = Field(description="generated whole turns (chitchat, coding_session)")


TURN_KINDS = ("user", "assistant", "tool", "generate")


def _turn_kind(value: Any) -> str | None:
    if isinstance(value, BaseModel):
        for kind in TURN_KINDS:
            if kind in type(value).model_fields:
                return kind
    if isinstance(value, dict):
        present = [k for k in TURN_KINDS if k in value]
        if len(present) == 1:
            return present[0]
    return None


Turn = Annotated[
    Annotated[UserTurn, Tag("user")]
    | Annotated[AssistantTurn, Tag("assistant")]
    | Annotated[ToolTurn, Tag("tool")]
    | Annotated[GenerateTurn, Tag("generate")],
    Discriminator(
        _turn_kind,
        custom_error_type="turn_kind",
        custom_error_message="a turn is a mapping with exactly one of the keys "
        "user, assistant, tool, generate",
    ),
]


class Session(Strict):
    """One chat of a multi-session scenario; the probe is asked in the last."""

    label: str | None = Field(default=None, description="e.g. a date; shown to nobody, for authors")
    turns: list[Turn] = Field(min_length=1)


class Probe(Strict):
    """The question at turn N+1: a user message, or a needle's question."""

    id: str = Field(pattern=SLUG, description="the item name: scenario::probe[strategy]")
    user: str | None = Field(default=None, description="the question asked at turn N+1")
    needle: str | None = Field(
        default=None, description="a needle id: its question and answer make the probe"
    )
    constraint: str | None = Field(
        default=None, description="a constraint id: its check applies to the answer"
    )
    expect: Expectation | None = Field(
        default=None,
        description="without one, the answer must agree with the full-context answer",
    )
    evidence: list[str] | None = Field(
        default=None, description="needle ids: the facts the answer rests on (for readers)"
    )

    @model_validator(mode="after")
    def _has_question(self) -> Probe:
        if self.user is None and self.needle is None:
            raise ValueError("a probe needs 'user' (the question) or 'needle' (a needle id)")
        return self


class Scenario(Strict):
    """One long session and the probes asked at its end."""

    id: str = Field(pattern=SLUG, description="unique in the suite; names the pytest items")
    description: str = Field(default="", description="one line: what this scenario catches")
    tags: list[str] = Field(default_factory=list, description="become pytest markers (- as _)")
    system: str | None = Field(default=None, description="the system prompt")
    turns: list[Turn] = Field(default_factory=list, description="the session before the probes")
    sessions: list[Session] | None = Field(
        default=None,
        description="Several chats in a row instead of 'turns'; strategies are told "
        "when each one ends, and the probe comes in the last",
    )
    needles: list[Needle] = Field(default_factory=list, description="facts planted in the session")
    constraints: list[Constraint] = Field(
        default_factory=list, description="rules the user states that answers must respect"
    )
    probes: list[Probe] = Field(min_length=1, description="the questions asked at turn N+1")
    mode: Mode | None = Field(
        default=None,
        description="replay (the scripted turns, the default) or rollout (the model writes "
        "every assistant turn); --ctx-mode wins",
    )
    rollout: RolloutSpec | None = Field(
        default=None, description="the scripted user, tool stubs and bounds of a rollout"
    )
    recorded_windows: str | None = Field(
        default=None,
        description="A JSON file, relative to this one and confined like !include, of the "
        "windows production sent (written by `ctxeval import` from traces); the 'recorded' "
        "strategy replays them",
    )
    # Consumed by the loader before validation; declared for the JSON Schema.
    vars: dict[str, Any] | None = Field(
        default=None,
        description="variables for {{ jinja2 }} templates; makes every string a template",
    )
    matrix: dict[str, list[Any]] | None = Field(
        default=None,
        description="Expands the file into one scenario per combination, e.g. "
        "{depth: [0.1, 0.5], turns: [10, 20]}; values are template variables",
    )

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        if self.sessions is not None and self.turns:
            raise LocatedValueError(
                ("sessions",), "use either 'turns' (one chat) or 'sessions' (several), not both"
            )
        groups: tuple[tuple[str, list[Any]], ...] = (
            ("needles", self.needles),
            ("constraints", self.constraints),
            ("probes", self.probes),
        )
        for kind, items in groups:
            seen: set[str] = set()
            for i, item in enumerate(items):
                if item.id in seen:
                    raise LocatedValueError(
                        (kind, i, "id"), f"duplicate {kind[:-1]} id {item.id!r}"
                    )
                seen.add(item.id)
        if self.rollout is not None:  # a rollout may ask a probe at any turn
            probes = {p.id for p in self.probes}
            for name in self.rollout.probe_turns:
                if name not in probes:
                    raise LocatedValueError(
                        ("rollout", "probe_turns", name),
                        f"probe_turns names probe {name!r}; known probes: "
                        f"{', '.join(sorted(probes))}" + _guess(name, probes),
                    )
        needles = {n.id: n for n in self.needles}
        constraints = {c.id for c in self.constraints}
        for i, probe in enumerate(self.probes):
            if probe.needle is not None:
                needle = needles.get(probe.needle)
                if needle is None:
                    raise LocatedValueError(
                        ("probes", i, "needle"),
                        f"probe {probe.id!r} names needle {probe.needle!r}; "
                        f"known needles: {', '.join(sorted(needles)) or 'none'}"
                        + _guess(probe.needle, needles),
                    )
                if probe.user is None and needle.question is None:
                    raise LocatedValueError(
                        ("probes", i), f"probe {probe.id!r}: needle {needle.id!r} has no 'question'"
                    )
                if probe.expect is None and needle.answer is None:
                    raise LocatedValueError(
                        ("probes", i), f"probe {probe.id!r}: needle {needle.id!r} has no 'answer'"
                    )
            for j, fact in enumerate(probe.evidence or []):
                if fact not in needles:
                    raise LocatedValueError(
                        ("probes", i, "evidence", j),
                        f"probe {probe.id!r} names evidence {fact!r}; "
                        f"known needles: {', '.join(sorted(needles)) or 'none'}"
                        + _guess(fact, needles),
                    )
            if probe.constraint is not None and probe.constraint not in constraints:
                raise LocatedValueError(
                    ("probes", i, "constraint"),
                    f"probe {probe.id!r} names constraint {probe.constraint!r}; "
                    f"known constraints: {', '.join(sorted(constraints)) or 'none'}"
                    + _guess(probe.constraint, constraints),
                )
        return self


class ScenarioFile(Strict):
    """A file holds one scenario, or several under ``scenarios:``."""

    scenarios: list[Scenario] = Field(min_length=1)
