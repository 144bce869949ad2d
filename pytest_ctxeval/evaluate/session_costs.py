"""A record's per-session figures: the simulated session's requests priced
(without and with the provider's prompt cache), its cache hit ratio and
breaks, and its per-request series.  See docs/costs.md for the cost model."""

from __future__ import annotations

from typing import Any

from ..llm.cache_rules import RULES, CacheRules, rules_named
from ..llm.costs import (
    RequestUse,
    cache_discount_usd,
    cache_prices,
    cache_rules,
    priced_requests,
)
from ..results.record import ResultRecord
from .session_ledger import SERIES
from .simulate import SessionTrace


def fill_session_fields(record: ResultRecord, trace: SessionTrace, model: str) -> None:
    """Set every ``session_*`` and ``cache_*`` field of ``record`` from ``trace``.

    Worked out once per state of the trace: every probe of a session records
    the same figures (its lists shared: records only read them)."""
    cache = trace.cache
    state = (
        model,
        len(trace.requests),
        trace.strategy_calls,
        trace.strategy_cost_usd,
        trace.strategy_prompt_tokens,
        cache.break_count if cache is not None else None,
    )
    memo = trace.session_fields
    if memo is None or memo[0] != state:
        memo = trace.session_fields = (state, _session_fields(trace, model))
    for name, value in memo[1].items():
        setattr(record, name, value)


def _session_fields(trace: SessionTrace, model: str) -> dict[str, Any]:
    requests = trace.requests
    rules = trace.cache.rules if trace.cache is not None else cache_rules(model)
    uses = [
        RequestUse(r.prompt_tokens, r.cached_tokens, r.cache_write_tokens, r.output_tokens)
        for r in requests
    ]
    priced = priced_requests(cache_prices(model, rules), uses)
    fields: dict[str, Any] = {"cache_model": rules.name}
    fields["session_prompt_tokens"] = [r.prompt_tokens for r in requests]
    fields["session_input_tokens"] = input_tokens = trace.cumulative_input_tokens
    fields["session_output_tokens"] = sum(r.output_tokens for r in requests)
    fields["session_cached_tokens"] = cached = sum(r.cached_tokens for r in requests)
    fields["session_cache_write_tokens"] = sum(r.cache_write_tokens for r in requests)
    if input_tokens:
        fields["session_cache_hit_ratio"] = cached / input_tokens
    fields["session_strategy_calls"] = trace.strategy_calls
    fields["session_strategy_input_tokens"] = trace.strategy_prompt_tokens
    fields["session_strategy_cost_usd"] = trace.strategy_cost_usd
    # The strategy's calls are not cached requests of the session: full price both ways.
    fields["session_cost_usd"] = priced.cost_usd + trace.strategy_cost_usd
    fields["session_cached_cost_usd"] = priced.cached_cost_usd + trace.strategy_cost_usd
    if trace.cache is not None:
        fields["cache_breaks"] = [b.as_dict() for b in trace.cache.breaks]
        fields["cache_break_count"] = trace.cache.break_count
    # A series of zeros is left out (most strategies store nothing, OpenAI's
    # cache writes nothing): records are kept per probe, and this keeps them small.
    series = {
        name: [getattr(r, name) for r in requests] for name in SERIES if name != "prompt_tokens"
    }
    fields["session_requests"] = {name: values for name, values in series.items() if any(values)}
    return fields


def cache_rules_named(name: str | None, model: str = "") -> CacheRules | None:
    """The rule set called ``name``, with ``model``'s family minimum (Anthropic's);
    None for None (the model's provider's rules)."""
    if name is None:
        return None
    if name not in RULES:
        raise ValueError(f"unknown prompt-cache rules {name!r}; expected one of {sorted(RULES)}")
    return rules_named(name, model)


def probe_cached_cost_usd(record: ResultRecord, model: str, asks: int) -> float:
    """``record.cost_usd`` with the probe request's cache reads (and writes) priced
    as the provider would, for each ask."""
    rules = RULES.get(record.cache_model) or cache_rules(model)
    discount = cache_discount_usd(
        cache_prices(model, rules), record.probe_cached_tokens, record.probe_cache_write_tokens
    )
    return max(record.cost_usd - discount * asks, 0.0)
