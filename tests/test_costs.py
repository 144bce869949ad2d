"""Costs from litellm's bundled price map, with OpenAI-style prompt caching."""

from __future__ import annotations

import pytest

from pytest_ctxeval.llm.costs import (
    cache_savings_usd,
    cacheable_tokens,
    prices_for,
    request_cost,
)

# gpt-4o-mini in the bundled map: $0.15 / 1M input, $0.075 / 1M cached input, $0.60 / 1M output.
INPUT, CACHED, OUTPUT = 0.15e-6, 0.075e-6, 0.60e-6


@pytest.mark.parametrize(
    ("shared", "cached"),
    [(0, 0), (1000, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152), (1300, 1280)],
)
def test_cache_starts_at_1024_tokens_in_128_token_steps(shared: int, cached: int) -> None:
    assert cacheable_tokens(shared) == cached


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai/gpt-4o-mini"])
def test_prices_come_from_the_bundled_map(model: str) -> None:
    prices = prices_for(model)
    assert prices is not None
    assert prices.input == pytest.approx(INPUT)
    assert prices.cached_input == pytest.approx(CACHED)
    assert prices.output == pytest.approx(OUTPUT)


@pytest.mark.parametrize("model", ["ctxeval/oracle", "openai/my-local-llama"])
def test_mocks_and_unpriced_models_cost_nothing(model: str) -> None:
    assert prices_for(model) is None
    cost = request_cost(model, 5000, 100, shared_prefix_tokens=5000)
    assert (cost.cost_usd, cost.cached_cost_usd) == (0.0, 0.0)
    assert cache_savings_usd(model, 5000, 5000) == 0.0


def test_prefix_below_1024_tokens_gets_no_discount() -> None:
    cost = request_cost("openai/gpt-4o-mini", 1000, 10, shared_prefix_tokens=1000)
    assert cost.cached_tokens == 0
    assert cost.cost_usd == pytest.approx(1000 * INPUT + 10 * OUTPUT)
    assert cost.cached_cost_usd == cost.cost_usd


def test_prefix_of_1300_tokens_reads_1280_from_cache() -> None:
    cost = request_cost("openai/gpt-4o-mini", 1300, 10, shared_prefix_tokens=1300)
    assert cost.cached_tokens == 1280
    assert cost.cost_usd == pytest.approx(1300 * INPUT + 10 * OUTPUT)
    assert cost.cached_cost_usd == pytest.approx(20 * INPUT + 1280 * CACHED + 10 * OUTPUT)
    assert cache_savings_usd("openai/gpt-4o-mini", 1300, 1300) == pytest.approx(
        cost.cost_usd - cost.cached_cost_usd
    )


def test_cached_tokens_never_exceed_the_prompt() -> None:
    cost = request_cost("openai/gpt-4o-mini", 1100, 0, shared_prefix_tokens=4096)
    assert cost.cached_tokens == 1100


def test_anthropic_gets_no_automatic_discount() -> None:
    # Anthropic caches only at explicit cache_control breakpoints.
    model = "anthropic/claude-sonnet-4-6"
    prices = prices_for(model)
    assert prices is not None and prices.cached_input < prices.input
    cost = request_cost(model, 5000, 10, shared_prefix_tokens=5000)
    assert cost.cached_tokens == 0 and cost.cached_cost_usd == cost.cost_usd


# -- the session's prices, by the provider's cache rules ---------------------------------------


def test_anthropic_prices_cache_writes_at_a_premium_and_reads_at_a_tenth() -> None:
    from pytest_ctxeval.llm.costs import cache_discount_usd, cache_prices, cache_rules

    model = "anthropic/claude-haiku-4-5"
    rules = cache_rules(model)
    # Haiku 4.5 caches from 4,096 tokens (Anthropic's documented minimum).
    assert (rules.name, rules.min_tokens) == ("anthropic", 4096)
    prices = cache_prices(model, rules)
    assert prices is not None
    assert prices.cache_write == pytest.approx(1.25 * prices.input)
    assert prices.cache_read == pytest.approx(0.1 * prices.input)
    # Writing costs more than it saves on the same request; reading saves 90 %.
    assert cache_discount_usd(prices, 0, 1000) == pytest.approx(-250 * prices.input)
    assert cache_discount_usd(prices, 1000, 0) == pytest.approx(900 * prices.input)


def test_openai_session_requests_price_reads_at_the_cached_price() -> None:
    from pytest_ctxeval.llm.costs import RequestUse, cache_prices, cache_rules, priced_requests

    rules = cache_rules("gpt-4o-mini")
    assert rules.name == "openai"
    cost = priced_requests(
        cache_prices("gpt-4o-mini", rules),
        [RequestUse(2000, 0, 0, 100), RequestUse(3000, 1920, 0, 100)],
    )
    assert cost.cost_usd == pytest.approx(5000 * INPUT + 200 * OUTPUT)
    assert cost.cached_cost_usd == pytest.approx(
        (5000 - 1920) * INPUT + 1920 * CACHED + 200 * OUTPUT
    )
