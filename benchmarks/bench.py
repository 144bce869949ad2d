"""Performance figures of the harness, printed as numbers.

    python benchmarks/bench.py            # everything (about a minute)
    python benchmarks/bench.py --quick    # skip the xdist scaling run

Not a test: machines here are shared and noisy, so the script reports what
it measured and leaves judging to the reader.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_of(n: int, fn) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def pytest_version_overhead() -> None:
    def run(*extra: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "pytest", *extra, "--version"], capture_output=True, check=True
        )

    with_plugin = statistics.median(best_of(1, run) for _ in range(7))
    without = statistics.median(best_of(1, lambda: run("-p", "no:ctxeval")) for _ in range(7))
    print(
        f"pytest --version: {with_plugin * 1000:.0f} ms with the plugin, "
        f"{without * 1000:.0f} ms without ({(with_plugin - without) * 1000:+.0f} ms)"
    )


def session_yaml(turns: int, rows: int = 60) -> str:
    return textwrap.dedent(f"""\
        id: bench-{turns}
        system: You are a coding agent.
        turns:
          - user: Never use the requests library; always use urllib3.
          - assistant: Understood.
          - generate: {{kind: coding_session, turns: {turns}, seed: 1}}
          - tool: {{name: query, generate: {{kind: json_rows, rows: {rows}, seed: 2}}}}
          - assistant: Done.
        needles:
          - {{id: n, depth: 0.5, text: "The vault code is 7-3-9-1.", question: "What is the vault code?", answer: "7-3-9-1"}}
        probes:
          - {{id: n, needle: n}}
        """)


def model_free_work(turns: int) -> None:
    from pytest_ctxeval.evaluate.scoring import check_answer
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.evaluate.survival import fact_survival
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.llm.tokens import count_text_tokens, window_tokens
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.base import fork_strategy
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_conversations(session_yaml(turns), "bench.yaml")[0]
    chars = sum(len(m.get("content") or "") for m in conversation.messages)
    client = ModelClient("ctxeval/oracle")
    print(
        f"\nmodel-free work, {turns}-turn coding session ({len(conversation.messages)} messages, "
        f"{chars:,} chars), per strategy (simulate + window + tokens + survival + scoring):"
    )
    total = 0.0
    for spec in resolve("all"):
        count_text_tokens.cache_clear()

        def once() -> None:
            trace = simulate(conversation, spec.create(), client=client, model="ctxeval/oracle")
            strategy = fork_strategy(trace.strategy)
            strategy.add({"role": "user", "content": conversation.probes[0].question})
            window = strategy.window()
            window_tokens(window.messages, window.tools)
            fact_survival(conversation.facts, window)
            check_answer("7-3-9-1", conversation.probes[0].expect)  # type: ignore[arg-type]

        cold = best_of(1, once)
        warm = best_of(3, once)
        total += cold
        print(
            f"  {spec.name:<18} {cold * 1000:7.0f} ms cold, {warm * 1000:6.0f} ms warm (tokens cached)"
        )
    print(f"  all strategies: {total:.2f} s cold")


def linear_token_counting() -> None:
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.llm.tokens import count_text_tokens
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.full import FullStrategy

    print("\ntoken counting is cached per message: simulating `full` (quadratic windows)")
    for turns in (100, 200, 400):
        conversation = parse_conversations(session_yaml(turns), "bench.yaml")[0]
        count_text_tokens.cache_clear()
        seconds = best_of(
            1,
            lambda: simulate(
                conversation,
                FullStrategy(),
                client=ModelClient("ctxeval/oracle"),
                model="ctxeval/oracle",
            ),
        )
        info = count_text_tokens.cache_info()
        print(
            f"  {turns:4} turns: {seconds:6.2f} s, {info.misses:,} texts tokenised, {info.hits:,} cache hits"
        )


def long_session() -> None:
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_conversations(session_yaml(1000, rows=2000), "bench.yaml")[0]
    chars = sum(len(m.get("content") or "") for m in conversation.messages)
    print(
        f"\n1,000-turn session ({len(conversation.messages):,} messages, {chars / 1e6:.1f} MB of text):"
    )
    for spec in resolve("full,headtail,sliding,toolprune,observation-mask"):
        tracemalloc.start()
        start = time.perf_counter()
        simulate(
            conversation,
            spec.create(),
            client=ModelClient("ctxeval/oracle"),
            model="ctxeval/oracle",
        )
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  {spec.name:<18} {seconds:6.2f} s, peak {peak / 1e6:6.1f} MB allocated")


def xdist_scaling() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = Path(tmp, "scenarios")
        scenarios.mkdir()
        Path(tmp, "pytest.ini").write_text("[pytest]\n")
        grid = textwrap.dedent("""\
            id: grid
            matrix: {depth: [0.1, 0.3, 0.5, 0.7, 0.9], seed: [1, 2, 3, 4, 5, 6, 7, 8]}
            turns:
              - generate: {kind: coding_session, turns: 80, seed: "{{ seed }}"}
            needles:
              - {id: n, depth: "{{ depth }}", text: "The vault code is 7-3-9-1.", question: "What is the vault code?", answer: "7-3-9-1"}
            probes:
              - {id: n, needle: n}
            """)
        Path(scenarios, "grid.yaml").write_text(grid)

        def run(*extra: str) -> float:
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--ctx-fail-on=never",
                    *extra,
                ],
                cwd=tmp,
                capture_output=True,
                check=True,
            )
            return time.perf_counter() - start

        serial, parallel = run("-p", "no:xdist"), run("-n", "2")
        scoped = run("-n", "2", "--dist", "loadscope")
        print(
            f"\n-n 2 scaling, 40 scenarios x 12 strategies: {serial:.1f} s serial, "
            f"{parallel:.1f} s with -n 2 ({serial / parallel:.2f}x), "
            f"{scoped:.1f} s with -n 2 --dist loadscope ({serial / scoped:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the xdist scaling run")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    pytest_version_overhead()
    model_free_work(50)
    linear_token_counting()
    long_session()
    if not args.quick:
        xdist_scaling()


if __name__ == "__main__":
    main()
