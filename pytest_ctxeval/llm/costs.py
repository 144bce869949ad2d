"""What a request costs by litellm's bundled price map, and what it would
cost with the provider's prompt cache serving the prefix it shares with the
previous request.

The probe-level helpers (``request_cost``, ``cache_savings_usd``) model
OpenAI-style automatic caching of the prefix shared with the previous
request.  The session-level ones (``cache_rules``, ``cache_prices``,
``priced_requests``) price every simulated request with the provider's rules
from ``prompt_cache`` (Anthropic's breakpoints and write premium included);
see docs/costs.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._litellm import get_litellm
from .cache_rules import CacheRules, rules_for

CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128
# Providers that cache a repeated prefix on their own, without breakpoints.
AUTOMATIC_CACHE_PROVIDERS = frozenset({"openai", "azure"})


def cacheable_tokens(shared_prefix_tokens: int) -> int:
    """Tokens of a shared prefix an automatic prompt cache would serve."""
    if shared_prefix_tokens < CACHE_MIN_TOKENS:
        return 0
    return shared_prefix_tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


@dataclass(frozen=True)
class Prices:
    """USD per token; ``cached_input`` equals ``input`` when there is no discount."""

    input: float
    output: float
    cached_input: float


def prices_for(model: str) -> Prices | None:
    """Prices from the bundled map, or None for mocks and unpriced models."""
    if model.startswith("ctxeval/"):
        return None
    costs = get_litellm().model_cost
    # The map keys OpenAI models without the provider prefix ("gpt-4o-mini").
    entry = costs.get(model) or costs.get(model.split("/", 1)[-1])
    if not entry or entry.get("input_cost_per_token") is None:
        return None
    unit = float(entry["input_cost_per_token"])
    cached = entry.get("cache_read_input_token_cost")
    return Prices(
        input=unit,
        output=float(entry.get("output_cost_per_token") or 0.0),
        cached_input=float(cached) if cached is not None else unit,
    )


@dataclass(frozen=True)
class RequestCost:
    cost_usd: float
    cached_cost_usd: float
    cached_tokens: int


def automatic_cache(model: str) -> bool:
    try:
        provider = get_litellm().get_llm_provider(model=model)[1]
    except Exception:  # a model litellm cannot route gets no discount
        return False
    return provider in AUTOMATIC_CACHE_PROVIDERS


def cached_tokens_for(model: str, shared_prefix_tokens: int, prompt_tokens: int) -> int:
    if not automatic_cache(model):
        return 0
    return min(cacheable_tokens(shared_prefix_tokens), prompt_tokens)


def request_cost(
    model: str, prompt_tokens: int, completion_tokens: int, shared_prefix_tokens: int = 0
) -> RequestCost:
    """Cost without and with the prompt cache; zero for unpriced models."""
    cached = cached_tokens_for(model, shared_prefix_tokens, prompt_tokens)
    if prices_for(model) is None:
        return RequestCost(0.0, 0.0, cached)
    litellm = get_litellm()
    full = litellm.cost_per_token(
        model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )
    discounted = litellm.cost_per_token(
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cache_read_input_tokens=cached,
    )
    return RequestCost(float(sum(full)), float(sum(discounted)), cached)


def cache_savings_usd(model: str, shared_prefix_tokens: int, prompt_tokens: int) -> float:
    """How much less a request costs when its shared prefix is read from cache."""
    cost = request_cost(model, prompt_tokens, 0, shared_prefix_tokens)
    return max(cost.cost_usd - cost.cached_cost_usd, 0.0)


# -- the session: every simulated request, with the provider's cache rules ------------------


@dataclass(frozen=True)
class CachePrices:
    """USD per token, by the price map where it has them, else by the rule set's multipliers."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def cache_rules(model: str) -> CacheRules:
    """The prompt-cache rules of the model's provider (litellm's routing);
    the mock models and models litellm cannot route get OpenAI's."""
    if model.startswith("ctxeval/"):
        return rules_for(model)
    try:
        provider = get_litellm().get_llm_provider(model=model)[1]
    except Exception:  # a model litellm cannot route: the default rules
        provider = None
    return rules_for(model, provider)


def cache_prices(model: str, rules: CacheRules) -> CachePrices | None:
    """None for mocks and unpriced models (they cost nothing)."""
    prices = prices_for(model)
    if prices is None:
        return None
    entry = _price_entry(model)
    read = entry.get("cache_read_input_token_cost")
    write = entry.get("cache_creation_input_token_cost")
    return CachePrices(
        input=prices.input,
        output=prices.output,
        cache_read=float(read) if read is not None else prices.input * rules.read_multiplier,
        cache_write=float(write) if write is not None else prices.input * rules.write_multiplier,
    )


def _price_entry(model: str) -> dict[str, Any]:
    costs = get_litellm().model_cost
    return dict(costs.get(model) or costs.get(model.split("/", 1)[-1]) or {})


@dataclass(frozen=True)
class SessionCost:
    """The simulated session's requests priced: without and with the prompt cache."""

    cost_usd: float
    cached_cost_usd: float


def priced_requests(prices: CachePrices | None, uses: list[RequestUse]) -> SessionCost:
    """Each request: its input tokens at the input price, its reply at the
    output price; with the cache, read tokens at the read price and written
    tokens at the write price instead."""
    if prices is None:
        return SessionCost(0.0, 0.0)
    plain = cached = 0.0
    for use in uses:
        output = use.output_tokens * prices.output
        plain += use.prompt_tokens * prices.input + output
        fresh = max(use.prompt_tokens - use.cached_tokens - use.write_tokens, 0)
        cached += (
            fresh * prices.input
            + use.cached_tokens * prices.cache_read
            + use.write_tokens * prices.cache_write
            + output
        )
    return SessionCost(plain, cached)


def cache_discount_usd(prices: CachePrices | None, cached_tokens: int, write_tokens: int) -> float:
    """What the cache takes off one request (negative when writing costs more)."""
    if prices is None:
        return 0.0
    read_saving = cached_tokens * (prices.input - prices.cache_read)
    return read_saving - write_tokens * (prices.cache_write - prices.input)


@dataclass(frozen=True)
class RequestUse:
    """One request's tokens, as priced: prompt, read from cache, written to it, reply."""

    prompt_tokens: int
    cached_tokens: int = 0
    write_tokens: int = 0
    output_tokens: int = 0
