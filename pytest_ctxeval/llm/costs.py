"""What a request costs by litellm's bundled price map, and what it would
cost with the provider's prompt cache serving the prefix it shares with the
previous request.

Only OpenAI-style automatic caching is modelled: a prefix of 1,024 tokens or
more is cached in 128-token steps and billed at ``cache_read_input_token_cost``.
Anthropic caches only at explicit breakpoints, which requests here never set,
so no discount is assumed for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._litellm import get_litellm

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
