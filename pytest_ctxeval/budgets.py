"""Budget sweeps (``--ctx-budget``): each strategy that takes a
``budget_tokens`` parameter runs once per budget, named as the name grammar
shows parameters (``summarize[budget_tokens:2000]``); the others run once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .strategies.registry import StrategySpec

BUDGET_PARAM = "budget_tokens"


@dataclass(frozen=True)
class BudgetedStrategies:
    """The strategies a run evaluates, and which of the named ones take no budget."""

    specs: list[StrategySpec]
    without_budget: list[str] = field(default_factory=list)


def with_budgets(specs: list[StrategySpec], budgets: tuple[int, ...]) -> BudgetedStrategies:
    """Each spec that takes ``budget_tokens`` once per budget (a budget written
    with the strategy is replaced); every other spec once, as it is.  A budget
    the strategy rejects raises UnknownStrategyError naming both."""
    if not budgets:
        return BudgetedStrategies(list(specs))
    out: list[StrategySpec] = []
    without: list[str] = []
    for spec in specs:
        if not takes_budget(spec):
            out.append(spec)
            without.append(spec.name)
            continue
        out.extend(_at_budget(spec, budget) for budget in budgets)
    # summarize and summarize(budget_tokens=900) both become summarize[budget_tokens:B].
    unique = {spec.name: spec for spec in reversed(out)}
    return BudgetedStrategies([unique[n] for n in dict.fromkeys(s.name for s in out)], without)


def takes_budget(spec: StrategySpec) -> bool:
    from .strategies.params import accepted_params

    accepted = accepted_params(spec.factory)
    return BUDGET_PARAM in spec.params or (accepted is not None and BUDGET_PARAM in accepted)


def _at_budget(spec: StrategySpec, budget: int) -> StrategySpec:
    from .strategies.names import parse_name
    from .strategies.params import check_params
    from .strategies.registry import StrategySpec

    written = parse_name(spec.name)
    params = {**spec.params, BUDGET_PARAM: budget}
    check_params(f"strategy {spec.name!r} under --ctx-budget", spec.factory, params)
    shown = {**written.params, BUDGET_PARAM: budget}
    ref = ""
    if spec.ref:  # a module:Class that names itself: its import path, at this budget
        ref = _display(parse_name(spec.ref).base, spec.factory, shown)
    return StrategySpec(_display(written.base, spec.factory, shown), spec.factory, params, ref)


def _display(base: str, factory: Any, params: dict[str, Any]) -> str:
    """``base[k:v+...]`` in the order the strategy declares its parameters,
    as every other parameterised name is shown."""
    from .strategies.names import display_name
    from .strategies.params import accepted_params

    order = accepted_params(factory) or []
    ranked = sorted(params, key=lambda k: order.index(k) if k in order else len(order))
    return display_name(base, {k: params[k] for k in ranked})


def without_budget_name(strategy: str) -> str:
    """A budgeted strategy's name with its budget taken out:
    ``summarize[every_turns:5+budget_tokens:500]`` -> ``summarize[every_turns:5]``."""
    from .strategies.names import display_name, parse_name
    from .strategies.registry import UnknownStrategyError

    try:
        written = parse_name(strategy)
    except UnknownStrategyError:
        return strategy
    params = {k: v for k, v in written.params.items() if k != BUDGET_PARAM}
    return display_name(written.base, params)
