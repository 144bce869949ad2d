"""Performance figures of the harness, printed as numbers.

    python benchmarks/bench.py            # everything (a few minutes)
    python benchmarks/bench.py --quick    # skip the xdist scaling runs
    python benchmarks/bench.py --locomo   # also a LoCoMo-sized file under every strategy
    python benchmarks/bench.py --only workload,startup   # some sections only
    python benchmarks/bench.py --only report-open  # a LoCoMo-size run's report: size, write, open
    python benchmarks/bench.py --only xdist-locomo # -n 2 on a LoCoMo-size run (about 6 minutes)
    python benchmarks/bench.py --only locomo-everyday  # the same as a user runs it, then a rerun

Each section prints the command that reproduces its figure.  The workloads
(benchmarks/workload.py) are written to a temporary folder, never committed.

Not a test: machines here are shared and noisy, so the script reports what
it measured and leaves judging to the reader.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import report_open  # noqa: E402  (the report figures, next to this file)
import workload  # noqa: E402  (the scenario generators next to this file)

# Every pytest run here caches compiled modules as an installed package does,
# in a folder of its own (the repository's tree stays untouched), even where
# the environment turns bytecode caching off: otherwise each process would
# compile every module again, and start-up would measure the compiler.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "ctxeval-bench-pycache")

# Targets for the model-free path on the oracle (see the README's performance notes).
TARGET_MS_PER_SAMPLE = {50: 6.0, 200: 29.0}
TARGET_FIXED_S = 2.0
TARGET_PLUGIN_OVERHEAD_MS = 20.0
TARGET_OVER_TOKENIZING = 3.0
XDIST_ROUNDS = 3


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
            [sys.executable, "-m", "pytest", *extra, "--version"],
            capture_output=True,
            check=True,
            env=ENV,
        )

    with_plugin = statistics.median(best_of(1, run) for _ in range(7))
    without = statistics.median(best_of(1, lambda: run("-p", "no:ctxeval")) for _ in range(7))
    print(
        f"pytest --version: {with_plugin * 1000:.0f} ms with the plugin, "
        f"{without * 1000:.0f} ms without ({(with_plugin - without) * 1000:+.0f} ms)"
    )


NEEDLE_QA = 'question: "What is the vault code?", answer: "7-3-9-1"'


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
          - {{id: n, depth: 0.5, text: "The vault code is 7-3-9-1.", {NEEDLE_QA}}}
        probes:
          - {{id: n, needle: n}}
        """)


def model_free_work(turns: int) -> None:
    from pytest_ctxeval.evaluate.scoring import check_answer
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.evaluate.survival import fact_survival
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.llm.tokens import clear_token_counts, window_tokens
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
        clear_token_counts()

        def once(spec: Any = spec) -> None:
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
            f"  {spec.name:<18} {cold * 1000:7.0f} ms cold, "
            f"{warm * 1000:6.0f} ms warm (tokens cached)"
        )
    print(f"  all strategies: {total:.2f} s cold")


def linear_token_counting() -> None:
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.llm.tokens import clear_token_counts, count_text_tokens
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.full import FullStrategy

    print("\ntoken counting is cached per message: simulating `full` (quadratic windows)")
    for turns in (100, 200, 400):
        conversation = parse_conversations(session_yaml(turns), "bench.yaml")[0]
        clear_token_counts()
        seconds = best_of(
            1,
            lambda conversation=conversation: simulate(
                conversation,
                FullStrategy(),
                client=ModelClient("ctxeval/oracle"),
                model="ctxeval/oracle",
            ),
        )
        info = count_text_tokens.cache_info()
        print(
            f"  {turns:4} turns: {seconds:6.2f} s, {info.misses:,} texts tokenised, "
            f"{info.hits:,} cache hits"
        )


def long_session() -> None:
    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.client import ModelClient
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_conversations(session_yaml(1000, rows=2000), "bench.yaml")[0]
    chars = sum(len(m.get("content") or "") for m in conversation.messages)
    print(
        f"\n1,000-turn session ({len(conversation.messages):,} messages, "
        f"{chars / 1e6:.1f} MB of text):"
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


REPLAY_TURNS = (1000, 2000, 4000)
REPLAY_STRATEGIES = ("full", "headtail", "sliding", "toolprune", "truncate", "rag")
TARGET_REPLAY_MB = 500
REPLAY_REPEATS = 3


def replay_one(turns: int, name: str) -> None:
    """In a process of its own (``--replay-one``): simulate one session, print
    seconds and the process's peak resident memory."""
    import resource

    from pytest_ctxeval.evaluate.simulate import simulate
    from pytest_ctxeval.llm.mock_client import MockModelClient
    from pytest_ctxeval.llm.tokens import count_text_tokens
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    conversation = parse_conversations(session_yaml(turns, rows=2000), "bench.yaml")[0]
    count_text_tokens("warm the tokenizer")
    # CPU time, the best of a few replays: this machine is shared, and even
    # CPU time moves with its load.
    times = []
    for _ in range(REPLAY_REPEATS):
        cold_caches()  # each replay pays its tokenizing and reading again, as the first does
        start = time.process_time()
        simulate(
            conversation,
            resolve(name)[0].create(),
            client=MockModelClient("ctxeval/oracle"),
            model="ctxeval/oracle",
        )
        times.append(time.process_time() - start)
    seconds = min(times)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{seconds:.3f} {peak_mb:.0f} {len(conversation.messages)}")


def cold_caches() -> None:
    """Empty the harness's memo tables (token counts, the mock model's
    reading of texts), so that a repeated measurement pays what the first one did."""
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("pytest_ctxeval"):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
    from pytest_ctxeval.llm import text

    text._TERM_OF.clear()


def replay_shape() -> None:
    """Replay CPU time per doubling of the session (2.0x is linear) and peak memory."""
    sizes = " / ".join(f"{t:,}" for t in REPLAY_TURNS)
    print(f"\nsession replay, {sizes} turns (one process each, best of {REPLAY_REPEATS}):")
    for name in REPLAY_STRATEGIES:
        cells, times = [], []
        for turns in REPLAY_TURNS:
            out = subprocess.run(
                [sys.executable, __file__, "--replay-one", str(turns), name],
                env=ENV,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            seconds, peak_mb, messages = float(out[0]), float(out[1]), int(out[2])
            times.append(seconds)
            cells.append(f"{seconds:5.2f} s CPU {peak_mb:4.0f} MB")
        growth = " ".join(f"{b / a:.1f}x" for a, b in zip(times, times[1:], strict=False))
        print(f"  {name:<10} {' | '.join(cells)} | per doubling {growth} ({messages:,} messages)")
    print(f"  target: 2.0x per doubling (linear), under {TARGET_REPLAY_MB} MB at 4,000 turns")
    print("  reproduce: python benchmarks/bench.py --only replay")


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
              - {id: n, depth: "{{ depth }}", text: "The vault code is 7-3-9-1.", QA}
            probes:
              - {id: n, needle: n}
            """).replace("QA", NEEDLE_QA)
        Path(scenarios, "grid.yaml").write_text(grid)

        def run(*extra: str) -> float:
            return pytest_seconds(Path(tmp), *extra)

        serial, parallel = run("-p", "no:xdist"), run("-n", "2")
        scoped = run("-n", "2", "--dist", "loadscope")
        print(
            f"\n-n 2 scaling, 40 scenarios x 12 strategies: {serial:.1f} s serial, "
            f"{parallel:.1f} s with -n 2 ({serial / parallel:.2f}x), "
            f"{scoped:.1f} s with -n 2 --dist loadscope ({serial / scoped:.2f}x)"
        )


def pytest_seconds(cwd: Path, *args: str) -> float:
    """Wall time of one ``pytest`` run in ``cwd`` (outputs to the temporary folder)."""
    return pytest_wall_and_cpu(cwd, *args)[0]


def pytest_wall_and_cpu(cwd: Path, *args: str) -> tuple[float, float]:
    """Wall time and CPU time of one ``pytest`` run in ``cwd``; the CPU time
    counts every process of the run (xdist's controller and its workers)."""
    import resource

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    command = pytest_command(cwd, "out", *args)
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, env=ENV)
    return time.perf_counter() - start, children_cpu() - cpu


def pytest_command(cwd: Path, out: str, *args: str) -> list[str]:
    """A run writing to ``cwd / out``, emptied here, before any timing: a run
    reads the results it finds there (to keep the items a partial rerun
    leaves out), which would make every run after the first pay for reading
    the one before."""
    shutil.rmtree(cwd / out, ignore_errors=True)
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--ctx-fail-on=never",
        f"--ctx-results={cwd / out / 'results.jsonl'}",
        f"--ctx-report={cwd / out / 'report.html'}",
        *args,
    ]


def two_halves_at_once(cwd: Path, *args: str) -> float:
    """Wall time of two plain processes at once, each on half the scenario
    files (balanced by size): what a two-way split gives on this machine
    with no coordination at all, each process paying the whole fixed start."""
    halves: tuple[list[str], list[str]] = ([], [])
    sizes = [0, 0]
    files = sorted((cwd / "scenarios").glob("*.yaml"), key=lambda f: -f.stat().st_size)
    for file in files:
        lighter = sizes.index(min(sizes))
        halves[lighter].append(str(file.relative_to(cwd)))
        sizes[lighter] += file.stat().st_size
    commands = [
        pytest_command(cwd, f"half{i}", "-p", "no:xdist", *args, *half)
        for i, half in enumerate(halves)
    ]
    start = time.perf_counter()
    running = [
        subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=ENV,
        )
        for command in commands
    ]
    for process in running:
        process.wait()
    return time.perf_counter() - start


def xdist_own_cpu(items: int = 1, rounds: int = 3) -> tuple[float, float]:
    """CPU time of a project of ``items`` empty tests without this plugin,
    serial and with ``-n 2`` (best of ``rounds`` each): what pytest-xdist
    costs by itself, its workers' start and its reports of that many items."""
    import resource

    def cpu(*extra: str) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ctxeval"]
            + list(extra),
            cwd=project,
            capture_output=True,
            env=ENV,
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_trivial.py").write_text(
            "import pytest\n\n\n"
            f"@pytest.mark.parametrize('i', range({items}))\n"
            "def test_ok(i):\n    assert True\n"
        )
        (project / "pytest.ini").write_text("[pytest]\n")
        serial = min(cpu("-p", "no:xdist") for _ in range(rounds))
        return serial, min(cpu("-n", "2") for _ in range(rounds))


def cpu_loops_at_once() -> float:
    """How much faster two copies of a CPU-bound loop finish than one after
    the other: the most any two-process run can gain on this machine."""
    loop = "sum(i * i for i in range(6_000_000))"
    command = [sys.executable, "-c", loop]

    def wall(copies: int) -> float:
        start = time.perf_counter()
        running = [subprocess.Popen(command, env=ENV) for _ in range(copies)]
        for process in running:
            process.wait()
        return time.perf_counter() - start

    one = min(wall(1) for _ in range(3))
    both = min(wall(2) for _ in range(3))
    return 2 * one / both


def pairs_project(tmp: Path, pairs: int, count: int) -> Path:
    project = tmp / f"pairs-{pairs}-x{count}"
    workload.write_pairs(project / "scenarios", pairs, count)
    (project / "pytest.ini").write_text("[pytest]\n")
    return project


def per_sample_workload(tmp: Path, pairs: int, count: int = 50) -> tuple[float, float]:
    """(seconds per sample, fixed seconds) of ``pytest --ctx-strategy=full``
    over ``count`` conversations of ``pairs`` user/assistant pairs, from
    the best of three runs of one file and of ``count`` files."""
    one, many = pairs_project(tmp, pairs, 1), pairs_project(tmp, pairs, count)
    t_one = min(pytest_seconds(one, "--ctx-strategy=full") for _ in range(3))
    t_many = min(pytest_seconds(many, "--ctx-strategy=full") for _ in range(3))
    per_sample = (t_many - t_one) / (count - 1)
    return per_sample, t_one - per_sample


def workload_figures() -> None:
    print("\nper sample, `full` on ctxeval/oracle (50 files; fixed = 1 file minus one sample):")
    with tempfile.TemporaryDirectory() as tmp:
        for pairs in (50, 200):
            per_sample, fixed = per_sample_workload(Path(tmp), pairs)
            print(
                f"  {pairs:3} pairs: {per_sample * 1000:6.1f} ms per sample "
                f"(target <= {TARGET_MS_PER_SAMPLE[pairs]:g}), fixed start {fixed:.2f} s "
                f"(target < {TARGET_FIXED_S:g})"
            )
    print(
        "  reproduce: python benchmarks/workload.py pairs DIR/scenarios --pairs 200 --count 50"
        " && cd DIR && touch pytest.ini && time pytest -q --ctx-strategy=full"
    )


def tokenizing_floor(pairs: int = 200) -> None:
    """The model-free work of one sample against tokenizing its text once."""
    from pytest_ctxeval.llm.local_tokenizer import count_plainly, local_encoding
    from pytest_ctxeval.scenario.loader import parse_conversations

    conversation = parse_conversations(workload.pairs_scenario(0, pairs), "bench.yaml")[0]
    texts = [m.get("content") or "" for m in conversation.messages]
    encoding = local_encoding()
    floor = best_of(5, lambda: [count_plainly(encoding, t) for t in texts])
    with tempfile.TemporaryDirectory() as tmp:
        per_sample, _ = per_sample_workload(Path(tmp), pairs, count=20)
    print(
        f"\nmodel-free work vs tokenizing once, {pairs} pairs: tokenizing every text once "
        f"{floor * 1000:.1f} ms; a whole sample {per_sample * 1000:.1f} ms "
        f"({per_sample / floor:.1f}x, target <= {TARGET_OVER_TOKENIZING:g}x)"
    )
    print("  reproduce: python benchmarks/bench.py --only floor")


def startup_figures() -> None:
    """What the plugin adds to an unrelated project, and the import of a
    scenario run (nothing of litellm, pandas only for the report)."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_trivial.py").write_text("def test_ok():\n    assert True\n")
        (project / "pytest.ini").write_text("[pytest]\n")

        def run(*extra: str) -> float:
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
                cwd=project,
                capture_output=True,
                env=ENV,
                check=True,
            )
            return time.perf_counter() - start

        print("\nunrelated project, one trivial test (median of 9, runs alternated):")
        for label, extra in (("pytest -q", ()), ("pytest -q -n 2", ("-n", "2"))):
            with_plugin, without = [], []
            for _ in range(9):
                with_plugin.append(run(*extra))
                without.append(run(*extra, "-p", "no:ctxeval"))
            ms_with, ms_without = (statistics.median(t) * 1000 for t in (with_plugin, without))
            print(
                f"  {label:<15} {ms_with:4.0f} ms with the plugin, {ms_without:4.0f} ms with "
                f"-p no:ctxeval ({ms_with - ms_without:+.0f} ms, target <= "
                f"{TARGET_PLUGIN_OVERHEAD_MS:g})"
            )
    print("  reproduce: cd TMP && time pytest -q [-n 2]; time pytest -q [-n 2] -p no:ctxeval")
    with tempfile.TemporaryDirectory() as tmp:
        project = pairs_project(Path(tmp), 50, 1)
        out = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--ctx-strategy=full",
                f"--ctx-results={project / 'out.jsonl'}",
                f"--ctx-report={project / 'out.html'}",
            ],
            cwd=project,
            capture_output=True,
            env=ENV,
            text=True,
            check=False,
        ).stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.splitlines() if "|" in line}
    print(
        "  a scenario run on the oracle imports litellm: "
        f"{'yes' if 'litellm' in imported else 'no'}; pandas: "
        f"{'yes' if 'pandas' in imported else 'no'} (the HTML report's charts)"
    )
    print("  reproduce: python -X importtime -m pytest -q --ctx-strategy=full 2>&1 | grep litellm")


def xdist_row(name: str, project: Path, *extra: str) -> None:
    """One line: ``project`` serial, under ``-n 2`` and as two halves at
    once, best of XDIST_ROUNDS interleaved rounds, with the CPU ceiling."""
    serial_runs, parallel_runs, split_runs = [], [], []
    for _ in range(XDIST_ROUNDS):  # interleaved: a slow spell hits all three alike
        serial_runs.append(pytest_wall_and_cpu(project, "-p", "no:xdist", *extra))
        parallel_runs.append(pytest_wall_and_cpu(project, "-n", "2", *extra))
        split_runs.append(two_halves_at_once(project, *extra))
    serial, serial_cpu = min(serial_runs)
    parallel, parallel_cpu = min(parallel_runs)
    split = min(split_runs)
    # Two cores give at most 2 s of CPU per second: a run that needs
    # parallel_cpu where one process needs serial_cpu gains at most this.
    ceiling = 2 * serial_cpu / parallel_cpu
    print(
        f"  {name:<31} {serial:5.1f} s serial ({serial_cpu:.1f} s CPU), "
        f"{parallel:5.1f} s with -n 2 ({serial / parallel:.2f}x, target >= 1.8x; "
        f"{parallel_cpu:.1f} s CPU in all its processes, so at most "
        f"{ceiling:.2f}x on 2 cores); two halves at once {split:5.1f} s "
        f"({serial / split:.2f}x)"
    )
    # pytest-xdist's own cost grows with the items (each sends three reports
    # through its pipe and the controller reads them): that many empty tests
    # show the ceiling it leaves a run however little the plugin adds.
    items = results_lines(project / "out" / "results.jsonl")
    bare_serial, bare_parallel = xdist_own_cpu(items, rounds=2)
    xdist_cost = bare_parallel - bare_serial
    print(
        f"  {'':<31} pytest-xdist by itself on {items:,} empty tests: {xdist_cost:+.1f} s of "
        f"CPU under -n 2 ({xdist_cost / items * 1e6:.0f} us a test, its workers' start "
        f"included), so at most {2 * serial_cpu / (serial_cpu + xdist_cost):.2f}x on 2 cores "
        f"for this run were the plugin to cost nothing more under -n 2; the plugin's own "
        f"share of the extra CPU: {parallel_cpu - serial_cpu - xdist_cost:+.1f} s"
    )


def results_lines(path: Path) -> int:
    """The records of a results file: one a line."""
    with path.open("rb") as lines:
        return sum(1 for line in lines if line.strip())


# The LoCoMo-size run of docs/importing.md: 16,720 items, records of ~29 KB.
LOCOMO_STRATEGIES = "full,truncate,sliding,headtail,summarize,compaction,rag,toolprune"


def xdist_locomo() -> None:
    """-n 2 against one process on the LoCoMo-size import (a few minutes)."""
    print(f"\n-n 2 scaling, LoCoMo-size import (best of {XDIST_ROUNDS} interleaved rounds):")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        workload.import_locomo(project, project / "scenarios")
        (project / "pytest.ini").write_text("[pytest]\n")
        xdist_row("10 conversations, 8 strategies", project, f"--ctx-strategy={LOCOMO_STRATEGIES}")
    print(
        "  reproduce: python benchmarks/workload.py locomo-json locomo10.json && ctxeval import "
        "locomo locomo10.json -o scenarios && touch pytest.ini && time pytest -q [-n 2] "
        f"--ctx-strategy={LOCOMO_STRATEGIES}"
    )


def locomo_everyday() -> None:
    """A LoCoMo-size run as a user runs it: the default gate, so thousands of
    failing probes that pytest prints, then one conversation rerun, which
    keeps the other nine conversations' records (a few minutes)."""
    print("\nLoCoMo-size import as a user runs it (pytest's output and history on):")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        workload.import_locomo(project, project / "scenarios")
        (project / "pytest.ini").write_text("[pytest]\n")
        strategies = f"--ctx-strategy={LOCOMO_STRATEGIES}"
        full = timed_run(project, "-n", "2", strategies)
        print(f"  -n 2, every conversation, failures printed: {full[0]:5.1f} s, {full[1]}")
        for _ in range(2):
            rerun = timed_run(project, "scenarios/conv-0.yaml", strategies)
            print(f"  then conv-0 alone, the rest kept: {rerun[0]:5.1f} s, {rerun[1]}")
        cli = [sys.executable, "-c", "from pytest_ctxeval.cli import main; main()"]
        for name, *args in (
            ("report", "reports/results.jsonl", "-o", "again.html"),
            ("compare", "previous", "latest", "-o", "compare.html"),
            ("merge", "reports/results.jsonl", "-o", "merged.jsonl"),
        ):
            seconds, tail = timed_command(project, *cli, name, *args)
            print(f"  ctxeval {name} {' '.join(args[:-2])}: {seconds:5.1f} s, {tail}")
    print(
        "  reproduce: (as for xdist-locomo) time pytest -n 2 "
        f"{strategies}; time pytest scenarios/conv-0.yaml {strategies}; "
        "time ctxeval report|compare|merge ..."
    )


def timed_run(project: Path, *args: str) -> tuple[float, str]:
    """Wall time of a plain ``pytest`` run in ``project`` (its default
    results, report, history and pytest's cache), and its largest process's
    peak memory and outcome line."""
    return timed_command(project, sys.executable, "-m", "pytest", *args)


def timed_command(project: Path, *command: str) -> tuple[float, str]:
    """Wall time of ``command`` in ``project``; its largest process's peak
    memory and its last line of output."""
    measure = (
        "import resource, subprocess, sys; "
        "out = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout; "
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
        "print(f'peak {peak:.0f} MB;', out.strip().splitlines()[-1].strip('= '))"
    )
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", measure, *command],
        cwd=project,
        capture_output=True,
        env=ENV,
        text=True,
        check=False,
    )
    return time.perf_counter() - start, done.stdout.strip()


def xdist_workloads() -> None:
    """-n 2 against one process, on the bundled suite and the 200-pair workloads."""
    print(f"\n-n 2 scaling (best of {XDIST_ROUNDS} interleaved rounds):")
    with tempfile.TemporaryDirectory() as tmp:
        bundled = Path(tmp) / "bundled"
        shutil.copytree(ROOT / "scenarios", bundled / "scenarios")
        shutil.copytree(ROOT / "strategies", bundled / "strategies")
        (bundled / "pytest.ini").write_text("[pytest]\n")
        pairs = pairs_project(Path(tmp), 200, 50)
        # Each worker has at least 10 s of work here: what -n 2 is for.
        more_pairs = pairs_project(Path(tmp), 200, 100)
        runs = {
            "bundled suite": (bundled, ()),
            "200 pairs x 50, every strategy": (pairs, ()),
            "200 pairs x 100, every strategy": (more_pairs, ()),
            "200 pairs x 50, full": (pairs, ("--ctx-strategy=full",)),
        }
        for name, (project, extra) in runs.items():
            xdist_row(name, project, *extra)
    print(f"  two CPU-bound loops at once: {cpu_loops_at_once():.2f}x of one after the other")
    serial_cpu, parallel_cpu = xdist_own_cpu()
    print(
        f"  pytest-xdist by itself (this plugin off, one trivial test): {serial_cpu:.2f} s CPU "
        f"serial, {parallel_cpu:.2f} s with -n 2 ({parallel_cpu - serial_cpu:+.2f} s)"
    )
    print("  reproduce: time pytest -q -p no:xdist; time pytest -q -n 2")
    print("             time (pytest -q FILES-1 & pytest -q FILES-2; wait)")


def locomo_sized() -> None:
    """One LoCoMo-sized conversation (about 600 turns, 200 probes) under every strategy."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        workload.write_locomo(project / "scenarios")
        (project / "pytest.ini").write_text("[pytest]\n")
        seconds = pytest_seconds(project, "--ctx-strategy=all")
    print(f"\nLoCoMo-sized conversation, every strategy: {seconds:.1f} s")
    print(
        "  reproduce: python benchmarks/workload.py locomo DIR/scenarios && cd DIR && "
        "touch pytest.ini && time pytest -q --ctx-strategy=all"
    )


def needle_planting() -> None:
    """Seconds to load a file whose tool output is a 30,000-row log with 200
    needles planted in it (tests/test_loader_hostile.py checks what is planted;
    how long it takes is this figure, not a test)."""
    from pytest_ctxeval.scenario.loader import parse_conversations

    needles = "".join(
        f"  - {{id: n{i}, turn: 3, text: 'Fact number {i} is true.'}}\n" for i in range(200)
    )
    text = (
        "id: s\nturns:\n  - user: read the logs\n"
        "  - tool: {name: logs, generate: {kind: log_lines, rows: 30000}}\n"
        "needles:\n" + needles + "probes: [{id: p, user: q}]\n"
    )
    seconds = best_of(3, lambda: parse_conversations(text, "bench.yaml"))
    print(f"\nneedle planting: 200 needles in a 30,000-row log: {seconds:.2f} s (best of 3)")
    print("  reproduce: python benchmarks/bench.py --only planting")


SCALING_PAIRS = (1_000, 2_000, 4_000)
SCALING_LONG = (1_000, 2_000, 4_000, 8_000, 16_000, 20_000)


def _scaling_yaml(pairs: int, shape: str) -> str:
    """A one-scenario file of ``pairs`` pairs: the project's own workload
    (``pairs``) or one of the peer comparison's shapes (benchmarks/peers/shapes.py)."""
    if shape == "pairs":
        return workload.pairs_scenario(1, pairs, planted=True)
    from peers.shapes import shaped_workload
    from peers.workload import ctxeval_yaml

    return ctxeval_yaml(shaped_workload(shape, 1, pairs)[0])


def scaling_one(pairs: int, name: str, shape: str = "pairs") -> None:
    """In a process of its own (``--scaling-one``): one item of a ``pairs``-pair
    session (``shape``, see ``_scaling_yaml``) with a planted needle under
    ``name`` on the oracle, as the plugin evaluates a scenario's first item
    (simulate, window, window trace, the needle's fact ledger, fact survival,
    ground truth, calibration, scoring); prints seconds.

    The warm-up (imports, first uses) runs on another, short session: warmed
    up on the measured session itself, the timed item would find that
    session's text analysis kept from the warm-up while the session fits in
    those caches, and not once it outgrows them, which makes large sizes look
    slower per turn than they are."""
    import gc

    from pytest_ctxeval.evaluate.runner import EvalSettings, Evaluator
    from pytest_ctxeval.kept_objects import fewer_young_passes
    from pytest_ctxeval.scenario.loader import parse_conversations
    from pytest_ctxeval.strategies.registry import resolve

    [spec] = resolve(name)
    warm_up = parse_conversations(workload.pairs_scenario(2, 200, planted=True), "warm-up.yaml")
    Evaluator(EvalSettings(concurrency=1)).evaluate(
        warm_up[0], spec, warm_up[0].probes[0], source="warm-up.yaml"
    )
    with fewer_young_passes():  # as the plugin reads a scenario file
        conversation = parse_conversations(_scaling_yaml(pairs, shape), "bench.yaml")[0]
    gc.freeze()  # as the plugin keeps what collection built
    evaluator = Evaluator(EvalSettings(concurrency=1))
    start = time.perf_counter()
    with fewer_young_passes():  # as the plugin runs an item
        record = evaluator.evaluate(conversation, spec, conversation.probes[0], source="bench.yaml")
    seconds = time.perf_counter() - start
    print(f"{seconds:.3f} {record.error or ''}".strip())


# Every built-in strategy and a pipeline up to a 10 MB session (40,000 pairs is
# 9.7 MB of YAML); --only scaling-doubling-pair: headtail and full only.
SCALING_DOUBLING = (2_500, 5_000, 10_000, 20_000, 40_000)
TARGET_DOUBLING = 2.2
TARGET_PAIRS = 10_000  # 20,000 turns: linear up to here; beyond, a 10 MB session runs
SCALING_GIVE_UP_S = 120  # one item; past this the strategy's figures stop
SCALING_PIPELINE = "toolprune+compaction-cached(keep_turns=6)"
# The same on sessions of long tool outputs (benchmarks/peers/shapes.py:
# "tool-logs"): 2,500 pairs is 6,000 messages, 9.8 MB of YAML.
SCALING_TOOLS = (625, 1_250, 2_500)
# Each size is timed this many times, each in a fresh process; the fastest
# counts (a one-off slow spell doubles a step's ratio at the smaller sizes).
SCALING_ROUNDS = 2


def strategy_scaling(
    sizes: tuple[int, ...] = SCALING_PAIRS,
    names: tuple[str, ...] | None = None,
    shape: str = "pairs",
) -> None:
    """Seconds of one item per strategy as the session doubles: linear work
    doubles, quadratic work quadruples (the ``xN`` figures)."""
    from pytest_ctxeval.strategies.registry import resolve

    session = (
        "a user/assistant session"
        if shape == "pairs"
        else f"a session shaped {shape!r} (benchmarks/peers/shapes.py)"
    )
    print(
        f"\nscaling: a scenario's first item, on {session} with a planted "
        f"needle, on the oracle, per strategy (seconds, best of {SCALING_ROUNDS} processes; "
        "xN = time per doubling of turns, ~2 is linear):"
    )
    if names is None:  # every built-in strategy, and a pipeline
        specs = resolve("all") + resolve(SCALING_PIPELINE)
    else:
        specs = [s for n in names for s in resolve(n)]
    for spec in specs:
        best: dict[int, float] = {}
        notes: list[str] = []
        runs = len(sizes)  # a size given up on, and those after it, are not run again
        for _ in range(SCALING_ROUNDS):  # rounds over every size: a slow spell hits one size
            for index, pairs in enumerate(sizes[:runs]):
                seconds, said = _one_item(pairs, spec.name, shape)
                if said and said not in notes:
                    notes.append(said)
                if seconds is None:
                    runs = index
                    break
                best[pairs] = min(best.get(pairs, seconds), seconds)
        times = [best[p] for p in sizes[:runs]]
        note = "; ".join(notes)
        cells = "  ".join(f"{p:,}: {t:6.2f} s" for p, t in zip(sizes, times, strict=False))
        steps = zip(times, times[1:], strict=False)
        doubling = " ".join(f"x{b / a:.2f}" for a, b in steps if a > 0)
        print(f"  {spec.name:<18} {cells}  per doubling {doubling} {note}".rstrip())
    if sizes == SCALING_DOUBLING:
        print(
            f"  target: each at most x{TARGET_DOUBLING} per doubling up to {TARGET_PAIRS:,} "
            f"pairs ({2 * TARGET_PAIRS:,} turns); the larger sizes show a 10 MB session"
        )
    if sizes == SCALING_TOOLS:
        print(
            f"  target: each at most x{TARGET_DOUBLING} per doubling, up to a 10 MB session "
            "(2,500 pairs: 6,000 messages, a log of about 3,000 tokens every fifth pair)"
        )
    print(
        "  reproduce: python benchmarks/bench.py --only scaling "
        "(--only scaling-long: up to 20,000 pairs; --only scaling-doubling: every "
        "strategy and a pipeline, 2,500 to 40,000 pairs; scaling-doubling-pair: headtail "
        "and full only; scaling-tools: every strategy and a pipeline on long tool outputs)"
    )


def _one_item(pairs: int, name: str, shape: str = "pairs") -> tuple[float | None, str]:
    """(seconds of one ``--scaling-one`` run or None, what went wrong if anything)."""
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--scaling-one", str(pairs), name, shape],
            capture_output=True,
            text=True,
            env=ENV,
            check=False,
            timeout=SCALING_GIVE_UP_S,
        )
    except subprocess.TimeoutExpired:  # quadratic: the larger sizes would take hours
        return None, f"gave up at {pairs:,} pairs (over {SCALING_GIVE_UP_S} s)"
    first, _, error = (out.stdout.strip() or "nan").partition(" ")
    if out.returncode:
        return float(first), (out.stderr.strip().splitlines() or ["failed"])[-1]
    return float(first), error


SECTIONS = {
    "version": pytest_version_overhead,
    "startup": startup_figures,
    "workload": workload_figures,
    "floor": tokenizing_floor,
    "model-free": lambda: model_free_work(50),
    "tokens": linear_token_counting,
    "long": long_session,
    "replay": replay_shape,
    "scaling": strategy_scaling,
    "planting": needle_planting,
}


# What --only can name: the default sections and the longer ones.
ONLY = {
    **SECTIONS,
    "xdist": xdist_workloads,
    "xdist-locomo": xdist_locomo,
    "locomo-everyday": locomo_everyday,
    "locomo": locomo_sized,
    "report-open": report_open.figures,
    "scaling-long": lambda: strategy_scaling(SCALING_LONG),
    "scaling-doubling": lambda: strategy_scaling(SCALING_DOUBLING),
    "scaling-doubling-pair": lambda: strategy_scaling(SCALING_DOUBLING, ("headtail", "full")),
    "scaling-tools": lambda: strategy_scaling(SCALING_TOOLS, shape="tool-logs"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the xdist scaling runs")
    parser.add_argument("--locomo", action="store_true", help="also a LoCoMo-sized run")
    parser.add_argument("--only", help="comma-separated sections: " + ", ".join(ONLY))
    parser.add_argument(
        "--replay-one", nargs=2, metavar=("TURNS", "STRATEGY"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--scaling-one", nargs=3, metavar=("PAIRS", "STRATEGY", "SHAPE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if args.replay_one:
        replay_one(int(args.replay_one[0]), args.replay_one[1])
        return
    if args.scaling_one:
        scaling_one(int(args.scaling_one[0]), args.scaling_one[1], args.scaling_one[2])
        return
    only = [name.strip() for name in args.only.split(",")] if args.only else []
    unknown = [name for name in only if name not in ONLY]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r}; expected one of {', '.join(ONLY)}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    if only:
        for name in only:
            ONLY[name]()
        return
    for section in SECTIONS.values():
        section()
    if not args.quick:
        xdist_scaling()
        xdist_workloads()
    if args.locomo:
        locomo_sized()


if __name__ == "__main__":
    main()
