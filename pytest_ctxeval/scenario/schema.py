"""Scenario format v1 as pydantic models.

Unknown keys are errors everywhere (``extra="forbid"``), so a typo in a
scenario is reported instead of silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..text import normalise_expected, occurs
from .errors import closest
from .generators import GenerateSpec

SLUG = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
# ``f1`` without a ``threshold``: the share of word overlap QA benchmarks accept.
DEFAULT_F1_THRESHOLD = 0.5


class LocatedValueError(ValueError):
    """A validation error that knows where below the model it belongs, so the
    loader can point at that line rather than at the whole scenario."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class PythonCheck(Strict):
    """Checks on the Python code in an answer, by its syntax tree."""

    forbid_imports: list[str] = Field(
        default_factory=list,
        description="modules the code must not import (os.path covers from-imports)",
    )
    require_imports: list[str] = Field(default_factory=list, description="modules it must import")


class Session(Strict):
    """One chat of a multi-session scenario; the probe is asked in the last."""

    label: str | None = Field(default=None, description="e.g. a date; shown to nobody, for authors")
    turns: list[Turn] = Field(min_length=1)


class Expectation(Strict):
    """Checks on an answer; case-insensitive unless ``case_sensitive``."""

    contains: str | None = Field(
        default=None, description="the answer contains this, as words (15 is not in 150)"
    )
    contains_any: list[str] | None = Field(default=None, description="at least one of these")
    contains_all: list[str] | None = Field(default=None, description="every one of these")
    not_contains: str | list[str] | None = Field(default=None, description="none of these")
    regex: str | None = Field(default=None, description="re.search matches the answer")
    not_regex: str | None = Field(default=None, description="re.search does not match")
    equals: str | None = Field(
        default=None,
        description="equal but for case, whitespace, thousands separators, end punctuation "
        "and surrounding quotes",
    )
    python: PythonCheck | None = Field(
        default=None, description="checks on the Python code in the answer"
    )
    f1: str | list[str] | None = Field(
        default=None,
        description="a gold answer (any of a list): some run of the answer's content words "
        "has token F1 >= threshold against it, normalised as LoCoMo does; a number or date "
        "matches whole",
    )
    threshold: float | None = Field(
        default=None, gt=0.0, le=1.0, description=f"with f1 (default {DEFAULT_F1_THRESHOLD})"
    )
    abstains: bool | None = Field(
        default=None,
        description="true: the answer says it does not know or was never told; false: it does not",
    )
    case_sensitive: bool = Field(default=False, description="text checks respect case")
    # The scenario file this came from, set by the loader: its regexes share
    # the file's regex time (see evaluate/regex_budget.py).
    _source_file: str | None = PrivateAttr(default=None)

    @property
    def source_file(self) -> str | None:
        return self._source_file

    def __eq__(self, other: object) -> bool:
        # The same checks are equal wherever they were written.
        if not isinstance(other, Expectation):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic models are

    @field_validator("contains", "equals")
    @classmethod
    def _has_text(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _require_text(value, quotes=info.field_name == "equals")
        return value

    @field_validator("contains_any", "contains_all", "not_contains", "f1")
    @classmethod
    def _each_has_text(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str):
            _require_text(value)
        elif value is not None:
            _require_texts(value, "string")
        return value

    @field_validator("regex", "not_regex")
    @classmethod
    def _compiles(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not value:
            # re.search("") matches everything: regex would pass, not_regex fail, every answer.
            # (A blank pattern is a real check: "\t" finds tab indentation.)
            raise ValueError("empty pattern; expected a regular expression")
        try:
            pattern = re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        if info.field_name == "regex" and pattern.search("") is not None:
            raise ValueError(
                f"/{value}/ matches even an empty answer; expected a pattern that needs "
                "some text to match"
            )
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> Expectation:
        if self.threshold is not None and self.f1 is None:
            raise LocatedValueError(
                ("threshold",), "'threshold' applies to 'f1'; expected an f1 gold answer with it"
            )
        checks = self.model_dump(exclude={"case_sensitive", "threshold"}, exclude_none=True)
        if not checks:
            raise ValueError(
                "an expectation needs at least one of contains, contains_any, contains_all, "
                "not_contains, regex, not_regex, equals, python, f1, abstains"
            )
        return self


class Needle(Strict):
    """A fact planted at a turn (1-based message index) or a depth (0..1 of tokens)."""

    id: str = Field(pattern=SLUG, description="named by probes and in fact survival")
    text: str = Field(min_length=1, description="the sentence planted in the session")
    question: str | None = Field(default=None, description="asked by a probe naming this needle")
    answer: str | list[str] | None = Field(
        default=None, description="what a correct answer contains (any of a list)"
    )
    depth: float | None = Field(
        default=None, ge=0.0, le=1.0, description="position as a fraction of the session's tokens"
    )
    turn: int | None = Field(default=None, ge=1, description="1-based message index")
    role: Literal["user", "assistant", "tool"] | None = Field(
        default=None, description="with depth: plant in the nearest message of this role"
    )
    secret: bool = Field(
        default=False,
        description="its answer is a secret: scored as it is, shown as [redacted] in results, "
        "the report and the terminal",
    )

    @field_validator("answer")
    @classmethod
    def _answer_has_text(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str):
            _require_text(value)
        elif value is not None:
            _require_texts(value, "answer")
        return value

    @model_validator(mode="after")
    def _one_place(self) -> Needle:
        if (self.depth is None) == (self.turn is None):
            raise ValueError("a needle needs exactly one of 'depth' (0..1) or 'turn' (1-based)")
        return self

    @model_validator(mode="after")
    def _answers_in_text(self) -> Needle:
        # Matched as an answer is checked: a model that quotes the needle passes.
        answers = [self.answer] if isinstance(self.answer, str) else self.answer or []
        for i, answer in enumerate(answers):
            if not occurs(answer, self.text):
                where: tuple[str | int, ...] = (
                    ("answer",) if isinstance(self.answer, str) else ("answer", i)
                )
                raise LocatedValueError(
                    where,
                    f"answer {answer!r} does not occur in the needle's text {_quoted(self.text)}; "
                    "expected an answer the text states, so a model that quotes it passes",
                )
        return self


class ConstraintPart(Strict):
    text: str = Field(min_length=1)
    at_turn: int = Field(ge=1)


class Constraint(Strict):
    """An instruction the user states at a turn (or in parts, at several turns)
    that a later answer must respect; ``check`` applies to every probe that
    names the constraint."""

    id: str = Field(pattern=SLUG, description="named by probes and in fact survival")
    text: str | None = Field(default=None, min_length=1, description="what the user says")
    at_turn: int = Field(
        default=1, ge=1, description="joins the user message at or before this message (1-based)"
    )
    parts: list[ConstraintPart] | None = Field(
        default=None, min_length=2, description="the constraint said in parts, at several turns"
    )
    check: Expectation | None = Field(
        default=None, description="applied to every probe that names this constraint"
    )

    @model_validator(mode="after")
    def _text_or_parts(self) -> Constraint:
        if (self.text is None) == (self.parts is None):
            raise ValueError(
                "a constraint needs exactly one of 'text' or 'parts' (a list of {text, at_turn})"
            )
        return self

    def pieces(self) -> list[ConstraintPart]:
        return self.parts or [ConstraintPart(text=self.text or "", at_turn=self.at_turn)]


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


def _guess(name: str, known: Iterable[str]) -> str:
    guess = closest(name, sorted(known))
    return f"; did you mean {guess!r}?" if guess else ""


def _require_text(value: str, *, quotes: bool = False) -> None:
    """Something to look for once the answer's normalisation is applied: an
    empty string is in every answer, so the check would pass vacuously."""
    if not normalise_expected(value, quotes=quotes):
        ignored = (
            "whitespace, end punctuation and quotes" if quotes else "whitespace and end punctuation"
        )
        raise ValueError(
            f"{value!r} is empty once {ignored} are ignored; expected the text to look for"
        )


def _require_texts(values: list[str], what: str) -> None:
    if not values:
        raise ValueError(f"empty list; expected at least one {what}")
    for i, value in enumerate(values):
        try:
            _require_text(value)
        except ValueError as exc:
            raise LocatedValueError((i,), str(exc)) from None


def _quoted(text: str, limit: int = 160) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "\u2026")


class ScenarioFile(Strict):
    """A file holds one scenario, or several under ``scenarios:``."""

    scenarios: list[Scenario] = Field(min_length=1)
