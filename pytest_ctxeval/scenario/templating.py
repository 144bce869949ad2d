"""Jinja2 templating of scenario strings (in the sandbox) and matrix expansion.

Strings are rendered in place in the parsed data, so YAML line numbers stay
valid for error messages.  A string that is exactly one ``{{ expression }}``
keeps the expression's type: ``depth: "{{ depth }}"`` gives a float.

Templates run metered (sandbox.py): a template that would make too much text,
loop too long or take too long is refused with the limit it hit."""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateError, Undefined

from .limits import LimitExceeded, Limits
from .meter import Meter
from .sandbox import MeteredEnvironment, metering

Loc = tuple[str | int, ...]

_ONLY_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)
_ENV = MeteredEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


class TemplateProblem(ValueError):
    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


class Renderer:
    """Renders the templates of one file; they share its ``template_seconds``."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits.from_env()
        self.seconds_left = float(self.limits.template_seconds)

    def render_tree(self, data: Any, variables: dict[str, Any], loc: Loc = ()) -> Any:
        if isinstance(data, dict):
            return {k: self.render_tree(v, variables, (*loc, k)) for k, v in data.items()}
        if isinstance(data, list):
            return [self.render_tree(v, variables, (*loc, i)) for i, v in enumerate(data)]
        if isinstance(data, str) and ("{{" in data or "{%" in data):
            return self.render(data, variables, loc)
        return data

    def render(self, text: str, variables: dict[str, Any], loc: Loc) -> Any:
        start = time.monotonic()
        meter = Meter(self.limits, start + self.seconds_left)
        try:
            with metering(meter):
                return _render(text, variables, meter)
        except LimitExceeded as exc:
            raise TemplateProblem(loc, f"template: {exc}") from None
        except RecursionError:
            raise TemplateProblem(
                loc, "template error: it calls itself too deeply (a macro or a recursive loop)"
            ) from None
        except TemplateError as exc:
            raise TemplateProblem(loc, f"template error: {_brief(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - the template's own fault, e.g. 1 / 0
            message = f"template error: {type(exc).__name__}: {_brief(exc)}"
            raise TemplateProblem(loc, message) from None
        finally:
            self.seconds_left -= time.monotonic() - start


def _brief(exc: Exception, limit: int = 300) -> str:
    """An error's message, cut short: it may quote a value the template made."""
    text = str(exc)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def render_tree(data: Any, variables: dict[str, Any], loc: Loc = ()) -> Any:
    """Render every template string in ``data`` (limits from the environment)."""
    return Renderer().render_tree(data, variables, loc)


def _render(text: str, variables: dict[str, Any], meter: Meter) -> Any:
    only = _ONLY_EXPRESSION.match(text)
    if only and "{{" not in only.group("expr"):
        value = _expression(only.group("expr"))(**variables)
        if isinstance(value, Undefined):
            value._fail_with_undefined_error()  # raises UndefinedError, a TemplateError
        meter.produced(value)
        return value
    return _template(text).render(**variables)


def _template(text: str) -> Template:
    return _cached_template(text) if len(text) <= _CACHED_TEXT else _ENV.from_string(text)


def _expression(source: str) -> Callable[..., Any]:
    if len(source) <= _CACHED_TEXT:
        return _cached_expression(source)
    return _ENV.compile_expression(source, undefined_to_none=False)


# Compiled once per text: a matrix renders the same strings once per
# combination.  Only short texts are kept, so the cache stays small.
_CACHED_TEXT = 4_000


@lru_cache(maxsize=512)
def _cached_template(text: str) -> Template:
    return _ENV.from_string(text)


@lru_cache(maxsize=512)
def _cached_expression(source: str) -> Callable[..., Any]:
    return _ENV.compile_expression(source, undefined_to_none=False)


def check_variables(variables: Any) -> dict[str, Any]:
    if not isinstance(variables, dict):
        raise TemplateProblem(("vars",), "'vars' must be a mapping of names to values")
    for name in variables:
        if not isinstance(name, str) or not name.isidentifier():
            raise TemplateProblem(
                ("vars",), f"variable name {name!r} must be an identifier (letters, digits, _)"
            )
    return variables


def matrix_size(matrix: Any) -> int:
    """How many scenarios ``matrix`` expands to; TemplateProblem if it is malformed."""
    if matrix is None:
        return 1
    if not isinstance(matrix, dict) or not matrix:
        raise TemplateProblem(("matrix",), "'matrix' must map names to lists of values")
    for name, values in matrix.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TemplateProblem(("matrix",), f"matrix name {name!r} must be an identifier")
        if not isinstance(values, list) or not values:
            raise TemplateProblem(("matrix", name), f"matrix {name!r} must be a non-empty list")
    return math.prod(len(values) for values in matrix.values())


def expand_matrix(matrix: Any) -> Iterator[dict[str, Any]]:
    """Every combination of the matrix values, in the order written."""
    matrix_size(matrix)
    if matrix is None:
        yield {}
        return
    names = list(matrix)
    for combo in itertools.product(*(matrix[n] for n in names)):
        yield dict(zip(names, combo, strict=True))


def matrix_suffix(combo: dict[str, Any]) -> str:
    return "".join(f"-{name}-{_slug(value)}" for name, value in combo.items())


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", str(value)).strip("_") or "x"
