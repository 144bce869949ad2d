"""pytest-ctxeval side by side with Inspect AI and promptfoo, on one workload.

    python benchmarks/compare.py --setup     # once: peers into benchmarks/.peers/ (pinned)
    python benchmarks/compare.py             # 50 conversations, 50 and 200 pairs, 3 rounds
    python benchmarks/compare.py --quick     # smoke run: 6 conversations, 1 round
    python benchmarks/compare.py --tools ctxeval,inspect

Run it with the project's venv Python. Each tool answers the same seeded
needle-in-a-haystack conversations with a mock model; every run must score
and pass every sample, or the tool is reported as failed. See
benchmarks/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the peers package beside this file

from peers.install import SetupError, setup  # noqa: E402
from peers.measure import Measured, run  # noqa: E402
from peers.tools import HERE, TOOLS, Tool, ToolFailed, offline_env  # noqa: E402
from peers.workload import Conversation, workload, write_ctxeval  # noqa: E402

LABELS = {
    "ctxeval": "pytest-ctxeval (full, oracle)",
    "inspect": "Inspect AI (mockllm/model)",
    "promptfoo-js": "promptfoo (JS provider)",
    "promptfoo-py": "promptfoo (Python provider)",
}
HARNESS = "ctxeval"
PER_SAMPLE_SHARE = 0.5  # target: per sample at most half of the fastest peer's
XDIST_SPEEDUP = 1.8  # target: `-n 2` at least this much faster than serial
# A floor is the least a run takes: best of many, so a busy spell does not raise it.
FLOOR_REPEATS = 20
OVER_TOKENIZING = 3.0  # target: a sample's model-free work at most this many times tokenizing it


# (pairs, conversations) -> one value per round; -conversations for the `-n 2` runs
Times = dict[tuple[int, int], list[float]]


@dataclass
class ToolRecord:
    """What the rounds measured for one tool."""

    wall: Times = field(default_factory=dict)
    cpu: Times = field(default_factory=dict)
    passed: dict[tuple[int, int], str] = field(default_factory=dict)
    peak_rss: int = 0
    notes: list[str] = field(default_factory=list)
    failed: str | None = None


def per_sample(times: Times, pairs: int, count: int) -> float:
    """Median over rounds of (t_N - t_1) / (N - 1), in seconds."""
    big, one = times[(pairs, count)], times[(pairs, 1)]
    return statistics.median((b - o) / (count - 1) for b, o in zip(big, one, strict=True))


def fixed_start(times: Times, pairs: int, count: int) -> float:
    """Median over rounds of t_1 less that round's per-sample cost: start-up and teardown."""
    big, one = times[(pairs, count)], times[(pairs, 1)]
    return statistics.median(o - (b - o) / (count - 1) for b, o in zip(big, one, strict=True))


def measure_once(
    tool: Tool, workload_dir: Path, runs: Path, count: int, workers: int = 1
) -> tuple[Measured, str]:
    """One run of ``tool`` and its 'passed/total'; ToolFailed unless every sample passed."""
    out = Path(tempfile.mkdtemp(dir=runs, prefix=f"{tool.name}-"))
    command = tool.command(workload_dir, out, workers)
    measured = run(command.argv, command.cwd, command.env, out / "console.log")
    passed = tool.passed(out, measured.output)
    if passed != count:
        tail = "\n".join(measured.output.strip().splitlines()[-15:])
        raise ToolFailed(
            f"{passed}/{count} samples passed (exit {measured.returncode}); it said:\n{tail}"
        )
    return measured, f"{passed}/{count}"


def _measure_into(
    record: ToolRecord,
    tool: Tool,
    workload_dir: Path,
    runs: Path,
    pairs: int,
    count: int,
    workers: int = 1,
) -> None:
    key = (pairs, -count if workers > 1 else count)
    try:
        measured, passed = measure_once(tool, workload_dir, runs, count, workers)
    except ToolFailed as failure:
        if workers > 1:  # no speed-up to report: drop the rounds so far too
            record.notes.append(f"-n {workers} failed: {failure}")
            record.wall.pop(key, None)
        else:
            record.failed = str(failure)
        print(f"  {tool.name}: FAILED {failure}", file=sys.stderr)
        return
    record.wall.setdefault(key, []).append(measured.seconds)
    record.cpu.setdefault(key, []).append(measured.cpu_seconds)
    record.passed[key] = passed
    if workers == 1:  # the table's peak RSS is a serial run's
        record.peak_rss = max(record.peak_rss, measured.peak_rss_bytes)
    label = f"{tool.name} -n {workers}" if workers > 1 else tool.name
    print(
        f"  {label:<13} {pairs:>4} pairs x {count:<3} {measured.seconds:7.2f} s wall "
        f"{measured.cpu_seconds:7.2f} s cpu {measured.peak_rss_bytes / 2**20:6.0f} MB  "
        f"{passed} passed",
        file=sys.stderr,
        flush=True,
    )


def rounds(
    names: list[str], pairs_sizes: list[int], count: int, round_count: int, xdist: bool, seed: int
) -> dict[str, ToolRecord]:
    records = {name: ToolRecord() for name in names}
    with tempfile.TemporaryDirectory(prefix="ctxeval-compare-") as tmp:
        root = Path(tmp)
        runs = root / "runs"
        runs.mkdir()
        conversations: dict[int, list[Conversation]] = {
            pairs: workload(count, pairs, seed) for pairs in pairs_sizes
        }
        dirs = {
            (name, pairs, n): TOOLS[name].prepare(
                conversations[pairs][:n], root / f"{name}-{pairs}-{n}"
            )
            for name in names
            for pairs in pairs_sizes
            for n in (1, count)
        }
        # One untimed run of each tool first: caches that any second run finds
        # (compiled modules, a tool's own set-up) are not what a round measures.
        for name in names:
            try:
                measure_once(TOOLS[name], dirs[(name, min(pairs_sizes), 1)], runs, 1)
            except ToolFailed as failure:
                records[name].failed = str(failure)
                print(f"  {name}: FAILED {failure}", file=sys.stderr)
        for round_no in range(1, round_count + 1):
            print(f"round {round_no}/{round_count}", file=sys.stderr)
            # Interleaved: every tool once per size and count, then the next; then the next round.
            for pairs in pairs_sizes:
                for n in (1, count):
                    for name in names:
                        if not records[name].failed:
                            workload_dir = dirs[(name, pairs, n)]
                            _measure_into(records[name], TOOLS[name], workload_dir, runs, pairs, n)
            harness = records.get(HARNESS)
            if xdist and harness is not None and not harness.failed and not harness.notes:
                pairs = max(pairs_sizes)
                for n in (1, count):  # per sample under -n 2 too, as for the serial runs
                    workload_dir = dirs[(HARNESS, pairs, n)]
                    _measure_into(harness, TOOLS[HARNESS], workload_dir, runs, pairs, n, 2)
    return records


def _ratio(value: float, base: float | None) -> str:
    return f"{value / base:5.2f}x" if base else "     -"


def _table(
    title: str,
    records: dict[str, ToolRecord],
    unavailable: dict[str, str],
    pairs_sizes: list[int],
    count: int,
    cpu: bool,
) -> None:
    small = min(pairs_sizes)
    base = records.get(HARNESS)
    base_times = None if base is None or base.failed else (base.cpu if cpu else base.wall)
    print(f"\n{title}")
    header = "".join(f" | ms/sample @{p:<4}" for p in pairs_sizes)
    extra = "" if cpu else " | peak RSS MB | passed"
    print(f"{'tool':<30}{header} | fixed start s{extra}")
    for name in LABELS:
        if name in unavailable:
            print(f"{LABELS[name]:<30} | {unavailable[name]}")
            continue
        if name not in records:
            continue
        record = records[name]
        if record.failed:
            print(f"{LABELS[name]:<30} | FAILED (see above)")
            continue
        times = record.cpu if cpu else record.wall
        cells = ""
        for pairs in pairs_sizes:
            ms = per_sample(times, pairs, count) * 1000
            ours = per_sample(base_times, pairs, count) * 1000 if base_times else None
            cells += f" | {ms:6.1f} {_ratio(ms, ours)}"
        fixed = fixed_start(times, small, count)
        ours_fixed = fixed_start(base_times, small, count) if base_times else None
        cells += f" | {fixed:5.2f} {_ratio(fixed, ours_fixed)}"
        if not cpu:
            rss = record.peak_rss / 2**20
            ours_rss = base.peak_rss / 2**20 if base is not None and not base.failed else None
            passed = ", ".join(
                f"{record.passed[(p, count)]} @{p}"
                for p in pairs_sizes
                if (p, count) in record.passed
            )
            cells += f" | {rss:5.0f} {_ratio(rss, ours_rss)} | {passed}"
        print(f"{LABELS[name]:<30}{cells}")


def report(
    records: dict[str, ToolRecord],
    unavailable: dict[str, str],
    pairs_sizes: list[int],
    count: int,
    round_count: int,
    load: tuple[float, float],
    floors: dict[int, Floors],
) -> None:
    print(
        f"\n{count} conversations; median of {round_count} interleaved round(s); ratios are "
        f"tool / pytest-ctxeval; {os.cpu_count()} cores, load average {load[0]:.1f} before and "
        f"{load[1]:.1f} after; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    if count < 20:
        print("(few conversations: the per-sample figures are noise; a smoke run only)")
    _table("wall time", records, unavailable, pairs_sizes, count, cpu=False)
    _table(
        "CPU time (user + system of the whole process tree: less sensitive to a busy machine)",
        records,
        unavailable,
        pairs_sizes,
        count,
        cpu=True,
    )
    for record in records.values():
        for note in record.notes:
            print(f"note: {note}")
    base = records.get(HARNESS)
    if base is not None and not base.failed:
        peers = {n: r for n, r in records.items() if n != HARNESS and not r.failed}
        print_targets(base, peers, pairs_sizes, count, floors)


def print_targets(
    base: ToolRecord,
    peers: dict[str, ToolRecord],
    pairs_sizes: list[int],
    count: int,
    floors: dict[int, Floors],
) -> None:
    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    print("\ntargets for pytest-ctxeval (wall time; CPU time in brackets):")
    small = min(pairs_sizes)
    if peers:
        for pairs in pairs_sizes:
            parts = []
            for kind in ("wall", "cpu"):
                own = {n: getattr(r, kind) for n, r in peers.items()}
                fastest = min(own, key=lambda n: per_sample(own[n], pairs, count))
                limit = per_sample(own[fastest], pairs, count) * PER_SAMPLE_SHARE * 1000
                ours = per_sample(getattr(base, kind), pairs, count) * 1000
                parts.append(
                    f"{ours:.1f} ms vs <= {limit:.1f} ms ({fastest}): {verdict(ours <= limit)}"
                )
            print(
                f"  per sample @{pairs} pairs <= half the fastest peer's: {parts[0]} [{parts[1]}]"
            )
        parts = []
        for kind in ("wall", "cpu"):
            own = {n: getattr(r, kind) for n, r in peers.items()}
            quickest = min(own, key=lambda n: fixed_start(own[n], small, count))
            theirs = fixed_start(own[quickest], small, count)
            ours = fixed_start(getattr(base, kind), small, count)
            parts.append(f"{ours:.2f} s vs {theirs:.2f} s ({quickest}): {verdict(ours < theirs)}")
        print(f"  fixed start below every peer's: {parts[0]} [{parts[1]}]")
    else:
        print("  (no peer measured: the per-sample and fixed-start targets need one)")
    for pairs in pairs_sizes:
        ours, floor = per_sample(base.cpu, pairs, count), floors[pairs]
        ratio = ours / floor.tokenizing
        bare = floor.yaml_loading + floor.pytest_item
        print(
            f"  model-free work per sample @{pairs} pairs <= {OVER_TOKENIZING:g}x tokenizing it "
            f"once: {ours * 1000:.1f} ms CPU vs {floor.tokenizing * 1000:.2f} ms ({ratio:.1f}x): "
            f"{verdict(ratio <= OVER_TOKENIZING)}\n"
            f"    for scale: loading the sample's YAML with libyaml takes "
            f"{floor.yaml_loading * 1000:.2f} ms and a pytest item that only asserts "
            f"{floor.pytest_item * 1000:.2f} ms; together {bare / floor.tokenizing:.1f}x "
            f"tokenizing, before any evaluation"
        )
    pairs = max(pairs_sizes)
    if (pairs, -count) in base.wall and (pairs, -1) in base.wall:
        serial, parallel = base.wall[(pairs, count)], base.wall[(pairs, -count)]
        whole = statistics.median(s / p for s, p in zip(serial, parallel, strict=True))
        parallel_times = {(pairs, count): parallel, (pairs, 1): base.wall[(pairs, -1)]}
        per = per_sample(base.wall, pairs, count) / per_sample(parallel_times, pairs, count)
        print(
            f"  -n 2 on {pairs} pairs x {count} >= {XDIST_SPEEDUP}x: whole run "
            f"{whole:.2f}x: {verdict(whole >= XDIST_SPEEDUP)}; per sample "
            f"{per:.2f}x (the fixed start left out)"
        )


@dataclass
class Floors:
    """Seconds per sample of work any harness of this kind does at least."""

    tokenizing: float
    yaml_loading: float
    pytest_item: float


def tokenizing_floor(conversations: list[Conversation]) -> float:
    """Seconds per sample to tokenize every message once with plain tiktoken
    (the encoding the harness's mock model counts with), best of FLOOR_REPEATS: the
    least a harness that counts tokens can do per sample."""
    from pytest_ctxeval.llm.local_tokenizer import local_encoding

    encoding = local_encoding()
    texts = [m["content"] for conv in conversations for m in conv.chat()]
    best = float("inf")
    for _ in range(FLOOR_REPEATS):
        start = time.perf_counter()
        for text in texts:
            encoding.encode_ordinary(text)
        best = min(best, time.perf_counter() - start)
    return best / len(conversations)


def yaml_loading_floor(conversations: list[Conversation]) -> float:
    """Seconds per sample to load the samples' scenario files with libyaml's
    C loader (no validation, no line marks), best of FLOOR_REPEATS."""
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        texts = [path.read_text() for path in write_ctxeval(conversations, Path(tmp))]
    best = float("inf")
    for _ in range(FLOOR_REPEATS):
        start = time.perf_counter()
        for text in texts:
            yaml.load(text, Loader=yaml.CSafeLoader)
        best = min(best, time.perf_counter() - start)
    return best / len(conversations)


def pytest_item_floor(items: int = 500) -> float:
    """Seconds pytest itself spends on an item whose test only asserts: the
    difference between ``items + 1`` such items and one, best of three."""
    test = "import pytest, os\n\n@pytest.mark.parametrize('i', range(int(os.environ['N'])))\n"
    test += "def test_nothing(i):\n    assert i >= 0\n"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ctxeval"]
    argv += ["-p", "no:xdist"]

    def seconds(count: int, project: Path) -> float:
        env = {**offline_env(), "N": str(count)}
        start = time.perf_counter()
        subprocess.run(argv, cwd=project, env=env, capture_output=True, check=True)
        return time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "test_nothing.py").write_text(test)
        one = min(seconds(1, project) for _ in range(3))
        many = min(seconds(items + 1, project) for _ in range(3))
    return (many - one) / items


def versions() -> str:
    pins = (HERE / "requirements-inspect.txt").read_text().split()
    inspect_ai = next((pin.split("==")[1] for pin in pins if pin.startswith("inspect_ai==")), "?")
    promptfoo = json.loads((HERE / "package.json").read_text())["dependencies"]["promptfoo"]
    node = "missing"
    if shutil.which("node"):
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return (
        f"Python {platform.python_version()}, inspect-ai {inspect_ai}, promptfoo {promptfoo}, "
        f"node {node}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true", help="install the peers, then exit")
    parser.add_argument("--quick", action="store_true", help="6 conversations, 1 round")
    parser.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help=f"comma-separated, from: {', '.join(TOOLS)} (default: all)",
    )
    parser.add_argument("--conversations", type=int, default=50, help="N (default 50)")
    parser.add_argument(
        "--pairs", default="50,200", help="user/assistant pairs per conversation (default 50,200)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--seed", type=int, default=7, help="workload seed (default 7)")
    parser.add_argument("--no-xdist", action="store_true", help="skip the `-n 2` runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.rounds = 6, 1
    names = [name.strip() for name in args.tools.split(",") if name.strip()]
    unknown = [name for name in names if name not in TOOLS]
    if unknown:
        parser.error(f"--tools: unknown {', '.join(unknown)}; expected some of {', '.join(TOOLS)}")
    args.names = names
    try:
        args.pairs_sizes = sorted({int(p) for p in args.pairs.split(",")})
    except ValueError:
        parser.error(f"--pairs: expected numbers like 50,200, got {args.pairs!r}")
    if min(args.pairs_sizes) < 3:
        parser.error(
            f"--pairs: each must be at least 3 (the needle is in pair 3), got {args.pairs}"
        )
    if args.conversations < 2:
        parser.error(
            "--conversations: at least 2 to split start-up from per-sample cost, "
            f"got {args.conversations}"
        )
    if args.rounds < 1:
        parser.error(f"--rounds: at least 1, got {args.rounds}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.setup:
        try:
            setup()
        except SetupError as problem:
            print(f"setup failed: {problem}", file=sys.stderr)
            return 1
        return 0
    unavailable = {}
    for name in args.names:
        reason = TOOLS[name].missing()
        if reason:
            unavailable[name] = reason
    names = [name for name in args.names if name not in unavailable]
    print(versions(), file=sys.stderr)
    load_before = os.getloadavg()[0]
    records = rounds(
        names, args.pairs_sizes, args.conversations, args.rounds, not args.no_xdist, args.seed
    )
    load = (load_before, os.getloadavg()[0])
    item = pytest_item_floor()
    floors = {}
    for pairs in args.pairs_sizes:
        conversations = workload(args.conversations, pairs, args.seed)
        floors[pairs] = Floors(
            tokenizing_floor(conversations), yaml_loading_floor(conversations), item
        )
    report(records, unavailable, args.pairs_sizes, args.conversations, args.rounds, load, floors)
    return 1 if any(record.failed for record in records.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
