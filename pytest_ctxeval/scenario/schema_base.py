"""What every model of the scenario format shares: strict keys, the id
pattern, errors that know their place, and the checks of texts to look for."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from ..text import normalise_expected
from .errors import closest

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
