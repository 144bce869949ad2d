"""The checks of the scenario format: what an answer must (or must not)
contain, the needles planted in the session, and the rules a user states."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..text import occurs
from .schema_base import (
    DEFAULT_F1_THRESHOLD,
    SLUG,
    LocatedValueError,
    Strict,
    _quoted,
    _require_text,
    _require_texts,
)


class PythonCheck(Strict):
    """Checks on the Python code in an answer, by its syntax tree."""

    forbid_imports: list[str] = Field(
        default_factory=list,
        description="modules the code must not import (os.path covers from-imports)",
    )
    require_imports: list[str] = Field(default_factory=list, description="modules it must import")


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
    # The fact ledger reports ``mutated`` when the slot shows another value.
    slot: str | None = Field(
        default=None,
        min_length=1,
        description="the words that name the fact's value ('port'): a window that shows "
        "them followed by another value than 'value' has the fact mutated",
    )
    value: str | None = Field(
        default=None, min_length=1, description="the value after 'slot' (default: the answer)"
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
