"""Jinja2 templating of scenario strings (in the sandbox) and matrix expansion.

Strings are rendered in place in the parsed data, so YAML line numbers stay
valid for error messages.  A string that is exactly one ``{{ expression }}``
keeps the expression's type: ``depth: "{{ depth }}"`` gives a float."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

Loc = tuple[str | int, ...]

_ONLY_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)
_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


class TemplateProblem(ValueError):
    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(message)
        self.loc = loc


def render_tree(data: Any, variables: dict[str, Any], loc: Loc = ()) -> Any:
    if isinstance(data, dict):
        return {k: render_tree(v, variables, (*loc, k)) for k, v in data.items()}
    if isinstance(data, list):
        return [render_tree(v, variables, (*loc, i)) for i, v in enumerate(data)]
    if isinstance(data, str) and ("{{" in data or "{%" in data):
        return _render(data, variables, loc)
    return data


def _render(text: str, variables: dict[str, Any], loc: Loc) -> Any:
    try:
        only = _ONLY_EXPRESSION.match(text)
        if only and "{{" not in only.group("expr"):
            value = _ENV.compile_expression(only.group("expr"), undefined_to_none=False)(
                **variables
            )
            if isinstance(value, Undefined):
                value._fail_with_undefined_error()  # raises UndefinedError, a TemplateError
            return value
        return _ENV.from_string(text).render(**variables)
    except TemplateError as exc:
        raise TemplateProblem(loc, f"template error: {exc}") from None


def expand_matrix(matrix: Any) -> Iterator[dict[str, Any]]:
    """Every combination of the matrix values, in the order written."""
    if matrix is None:
        yield {}
        return
    if not isinstance(matrix, dict) or not matrix:
        raise TemplateProblem(("matrix",), "'matrix' must map names to lists of values")
    for name, values in matrix.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TemplateProblem(("matrix",), f"matrix name {name!r} must be an identifier")
        if not isinstance(values, list) or not values:
            raise TemplateProblem(("matrix", name), f"matrix {name!r} must be a non-empty list")
    names = list(matrix)
    for combo in itertools.product(*(matrix[n] for n in names)):
        yield dict(zip(names, combo, strict=True))


def matrix_suffix(combo: dict[str, Any]) -> str:
    return "".join(f"-{name}-{_slug(value)}" for name, value in combo.items())


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", str(value)).strip("_") or "x"
