"""Strategy D against ``full`` on the field's agent profile, priced from the records.

    python benchmarks/field_profile.py                      # gpt-4.1 prices, OpenAI caching
    python benchmarks/field_profile.py --price-as claude-sonnet-4-5 --cache-model anthropic

Runs ``scenarios/agent-50-turns.yaml`` (a ~4,000-token system prompt, 50 turns
with ~2,500-token tool outputs) under the chosen strategies on the mock model,
then prices each simulated session from its record alone: the per-request
prompt, cached, cache-write and reply tokens (``session_prompt_tokens`` and
``session_requests``) at the list prices litellm's bundled cost map gives the
``--price-as`` model, plus the input tokens of the strategy's own calls
(``session_strategy_input_tokens``) at its input price.  The mock model
costs nothing, so this is what the same session would cost on that model,
and it shows that a record holds all it takes to reproduce a session's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "agent-50-turns.yaml"


def run(strategies: str, cache_model: str, results: Path) -> list[dict[str, Any]]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(SCENARIO),
        f"--ctx-strategy={strategies}",
        f"--ctx-cache-model={cache_model}",
        f"--ctx-results={results}",
        f"--ctx-report={results.with_suffix('.html')}",
        "--ctx-fail-on=never",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return [json.loads(line) for line in results.read_text().splitlines()]


def session_cost(record: dict[str, Any], model: str) -> tuple[float, float]:
    """(without the cache, with it) in USD for the record's session, at ``model``'s prices."""
    from pytest_ctxeval.llm.costs import RequestUse, cache_prices, priced_requests
    from pytest_ctxeval.llm.prompt_cache import RULES

    prompts = record["session_prompt_tokens"]
    series = record["session_requests"]

    def column(name: str) -> list[int]:
        return series.get(name) or [0] * len(prompts)

    uses = [
        RequestUse(*values)
        for values in zip(
            prompts,
            column("cached_tokens"),
            column("cache_write_tokens"),
            column("output_tokens"),
            strict=True,
        )
    ]
    prices = cache_prices(model, RULES[record["cache_model"]])
    if prices is None:
        raise SystemExit(f"{model!r} has no price in litellm's bundled cost map")
    cost = priced_requests(prices, uses)
    # The strategy's own calls (compaction, summaries) are not cached: input price both ways.
    own = record["session_strategy_input_tokens"] * prices.input
    return cost.cost_usd + own, cost.cached_cost_usd + own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategies", default="full,strategy-d")
    parser.add_argument("--price-as", default="gpt-4.1", help="a model in litellm's cost map")
    parser.add_argument("--cache-model", default="openai", choices=("openai", "anthropic"))
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    with tempfile.TemporaryDirectory() as tmp:
        records = run(args.strategies, args.cache_model, Path(tmp) / "results.jsonl")
    # One session per strategy: every probe's record carries the same session figures.
    sessions = {r["strategy"]: r for r in records}
    passed = {
        s: sum(r["verdict"] == "pass" for r in records if r["strategy"] == s) for s in sessions
    }
    probes = {s: sum(r["strategy"] == s for r in records) for s in sessions}
    full_tokens = sessions["full"]["session_input_tokens"] if "full" in sessions else None

    print(f"{SCENARIO.relative_to(ROOT)}, priced as {args.price_as} ({args.cache_model} caching)")
    width = max(len("strategy"), *map(len, sessions))
    header = (
        f"{'strategy':<{width}} {'requests':>8} {'input tokens':>13} {'vs full':>8} "
        f"{'cache hit':>9} {'cost':>9} {'cached cost':>11} {'strategy calls':>14} {'passed':>7}"
    )
    print(header)
    for name, record in sessions.items():
        tokens = record["session_input_tokens"]
        plain, cached = session_cost(record, args.price_as)
        fewer = f"-{1 - tokens / full_tokens:.1%}" if full_tokens and name != "full" else "–"
        print(
            f"{name:<{width}} {len(record['session_prompt_tokens']):>8} {tokens:>13,} {fewer:>8} "
            f"{record['session_cache_hit_ratio']:>9.1%} {plain:>9.2f} {cached:>11.2f} "
            f"{record['session_strategy_calls']:>14} {passed[name]:>3}/{probes[name]}"
        )


if __name__ == "__main__":
    main()
