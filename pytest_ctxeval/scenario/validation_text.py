"""Pydantic's validation errors as the loader reports them: at the line of
the offending node, with the field's dotted path and what would be accepted."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError

from .errors import Problem, closest
from .schema import TURN_KINDS, Scenario
from .yamlsource import find_node

Loc = tuple[str | int, ...]


def _problems(exc: ValidationError, root: yaml.Node, prefix: Loc, path: str) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc, model = _strip_tags(tuple(err["loc"]))
        # A LocatedValueError from a model validator says where below the model it is.
        loc = (*loc, *getattr((err.get("ctx") or {}).get("error"), "loc", ()))
        node, key_node = find_node(root, (*prefix, *loc))
        target = key_node if err["type"] == "extra_forbidden" and key_node else node
        mark = target.start_mark
        problems.append(Problem(path, mark.line + 1, mark.column + 1, _message(err, loc, model)))
    return sorted(set(problems), key=lambda p: (p.line, p.column, p.message))


def _message(err: Any, loc: Loc, parent: type[BaseModel] | None) -> str:
    where = _dotted(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = list(parent.model_fields) if parent else []
        hint = f"; expected one of: {', '.join(allowed)}" if allowed else ""
        guess = closest(loc[-1], allowed)
        hint += f"; did you mean {guess!r}?" if guess else ""
        return f"unknown key {loc[-1]!r} in {_dotted(loc[:-1]) or 'scenario'}{hint}"
    if kind == "missing":
        return f"missing required key {loc[-1]!r} in {_dotted(loc[:-1]) or 'scenario'}"
    if kind == "turn_kind" and isinstance(err.get("input"), dict):
        keys = ", ".join(repr(k) for k in err["input"]) or "none"
        unknown = [k for k in err["input"] if k not in TURN_KINDS]
        guess = closest(unknown[0], TURN_KINDS) if len(unknown) == 1 else None
        hint = f" (did you mean {guess!r}?)" if guess else ""
        return (
            f"{where}: a turn needs exactly one of the keys user, assistant, tool, generate"
            f"{hint}; got {keys}"
        )
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "literal_error":
        guess = closest(err.get("input"), re.findall(r"'([^']*)'", str(err["ctx"]["expected"])))
        msg += f"; did you mean {guess!r}?" if guess else ""
    return f"{where}: {msg}" if where else msg


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _strip_tags(loc: Loc) -> tuple[Loc, type[BaseModel] | None]:
    """Drop union tags from a pydantic location, and find the model that
    owns the last key (for listing the keys it accepts)."""
    model: Any = Scenario
    kept: list[str | int] = []
    parent: type[BaseModel] | None = None
    for part in loc:
        options = _models_in(model)
        if isinstance(part, str) and len(options) > 1 and part in TURN_KINDS:
            model = next((m for m in options if part in m.model_fields), model)
            continue
        kept.append(part)
        current = options[0] if len(options) == 1 else None
        parent = current
        if current is not None and isinstance(part, str) and part in current.model_fields:
            model = current.model_fields[part].annotation
        elif isinstance(part, int):
            model = _item_type(model)
        else:
            model = None
    if kept and isinstance(kept[-1], str):
        return tuple(kept), parent
    return tuple(kept), _single_model(model)


def _single_model(tp: Any) -> type[BaseModel] | None:
    options = _models_in(tp)
    return options[0] if len(options) == 1 else None


def _models_in(tp: Any) -> list[type[BaseModel]]:
    if tp is None:
        return []
    tp = _unannotate(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    if typing.get_origin(tp) in (Union, types.UnionType):
        found: list[type[BaseModel]] = []
        for arg in typing.get_args(tp):
            found.extend(_models_in(arg))
        return found
    return []


def _item_type(tp: Any) -> Any:
    tp = _unannotate(tp)
    if typing.get_origin(tp) in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            if typing.get_origin(_unannotate(arg)) is list:
                tp = _unannotate(arg)
    if typing.get_origin(tp) is list:
        return typing.get_args(tp)[0]
    return None


def _unannotate(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp
