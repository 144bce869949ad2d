"""Check parameters against the strategy that will receive them.

Used for parameters given on the command line (``headtail(head=50)``) and for
a preset's ``params``: an unknown parameter, a value of the wrong type or one
the strategy itself rejects is one error naming the strategy, the parameter
and what is allowed, before any scenario runs.
"""

from __future__ import annotations

import difflib
import inspect
import typing
from collections.abc import Mapping
from typing import Any

from .registration import UnknownStrategyError

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class StrategyParamError(UnknownStrategyError):
    """Parameters a strategy does not take, or values it rejects.

    An UnknownStrategyError, so whoever reports bad strategy names reports this too."""


def check_params(
    owner: str,
    factory: Any,
    params: Mapping[str, Any],
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``params`` checked against ``factory``'s signature and by building it once.

    ``owner`` names the strategy in messages (``strategy 'headtail'``).
    ``texts`` are the values as written: a string parameter given ``1`` on the
    command line gets ``"1"``, not the number.  Returns the parameters as the
    factory's annotations read them."""
    target = _target(factory)
    parameters = _parameters(target)
    if parameters is not None:
        _reject_unknown(owner, parameters, params)
    checked = _typed(owner, target, parameters or {}, dict(params), texts or {})
    try:
        factory(**checked)
    except Exception as exc:  # the strategy's own validation: say who passed what
        raise StrategyParamError(f"{owner} rejects {_shown(checked)}: {exc}") from None
    return checked


def accepted_params(factory: Any) -> list[str] | None:
    """The parameter names ``factory`` takes; None when it takes any (``**kwargs``)
    or its signature cannot be read."""
    parameters = _parameters(_target(factory))
    return None if parameters is None else list(parameters)


def _target(factory: Any) -> Any:
    # A lazily loaded entry point: its signature is the loaded class's.
    load = getattr(factory, "load_target", None)
    return load() if callable(load) else factory


def _parameters(target: Any) -> dict[str, inspect.Parameter] | None:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return {name: p for name, p in signature.parameters.items() if p.kind in _NAMED}


def _reject_unknown(
    owner: str, parameters: dict[str, inspect.Parameter], params: Mapping[str, Any]
) -> None:
    unknown = [name for name in params if name not in parameters]
    if not unknown:
        return
    accepted = ", ".join(parameters) or "none"
    problems = [f"{name!r}{did_you_mean(name, parameters)}" for name in unknown]
    noun = "parameter" if len(unknown) == 1 else "parameters"
    raise StrategyParamError(f"{owner} has no {noun} {', '.join(problems)}; it accepts: {accepted}")


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """`` (did you mean 'head'?)`` for a close match, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def _typed(
    owner: str,
    target: Any,
    parameters: dict[str, inspect.Parameter],
    params: dict[str, Any],
    texts: Mapping[str, str],
) -> dict[str, Any]:
    """Values validated against the annotations that can be read; the rest as given."""
    from pydantic import TypeAdapter, ValidationError

    hints = _hints(target)
    checked = dict(params)
    for name, value in params.items():
        hint = hints.get(name)
        if hint is None or name not in parameters:
            continue
        adapter: TypeAdapter[Any] = TypeAdapter(hint)
        candidates = [value] + ([texts[name]] if name in texts else [])
        for candidate in candidates:
            try:
                # Strict: YAML already typed the value; 1 is no flag and "5" no number.
                checked[name] = adapter.validate_python(candidate, strict=True)
                break
            except ValidationError:
                continue
        else:
            raise StrategyParamError(
                f"{owner} rejects {name}={value!r}: {name} takes {_annotation(parameters[name])}"
            )
    return checked


def _hints(target: Any) -> dict[str, Any]:
    function = target.__init__ if inspect.isclass(target) else target
    try:
        return typing.get_type_hints(function)
    except Exception:  # annotations that do not evaluate here: the call decides
        return {}


def _annotation(parameter: inspect.Parameter) -> str:
    annotation = parameter.annotation
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _shown(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items()) or "no parameters"
