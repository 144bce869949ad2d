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

from peers.floors import Floors, pytest_item_floor, tokenizing_floor, yaml_loading_floor  # noqa: E402
from peers.install import SetupError, setup  # noqa: E402
from peers.measure import Measured, run  # noqa: E402
from peers.shapes import SHAPES, shaped_workload  # noqa: E402
from peers.tools import HERE, TOOLS, Tool, ToolFailed  # noqa: E402
from peers.workload import Conversation  # noqa: E402

LABELS = {
    "ctxeval": "pytest-ctxeval (full, oracle)",
    "ctxeval-headtail": "pytest-ctxeval (headtail)",
    "inspect": "Inspect AI (mockllm/model)",
    "promptfoo-js": "promptfoo (JS provider)",
    "promptfoo-py": "promptfoo (Python provider)",
}
HARNESS = "ctxeval"
# This harness under each strategy the per-sample aim names (`full` is HARNESS).
HARNESS_RUNS = ("ctxeval", "ctxeval-headtail")
PER_SAMPLE_SHARE = 0.5  # target: per sample at most half of the fastest peer's
XDIST_SPEEDUP = 1.8  # target: `-n 2` at least this much faster than serial
OVER_TOKENIZING = 3.0  # target: a sample's model-free work at most this many times tokenizing it
# Foreign-load guard: a run during which other processes took more than this
# share of the machine's CPU is run again (up to GUARD_RETRIES times), and the
# least disturbed of its runs is kept.
FOREIGN_LIMIT = 0.35
GUARD_RETRIES = 2  # --guard-retries sets it


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
    foreign: list[float] = field(default_factory=list)  # other processes' CPU share, per run


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
    guard_retries = GUARD_RETRIES
    measured: Measured | None = None
    for _ in range(1 + guard_retries):
        out = Path(tempfile.mkdtemp(dir=runs, prefix=f"{tool.name}-"))
        command = tool.command(workload_dir, out, workers)
        attempt = run(command.argv, command.cwd, command.env, out / "console.log")
        if measured is None or attempt.foreign_share < measured.foreign_share:
            measured = attempt
        if attempt.foreign_share <= FOREIGN_LIMIT:
            break
    assert measured is not None
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
    record.foreign.append(measured.foreign_share)
    if workers == 1:  # the table's peak RSS is a serial run's
        record.peak_rss = max(record.peak_rss, measured.peak_rss_bytes)
    label = f"{tool.name} -n {workers}" if workers > 1 else tool.name
    print(
        f"  {label:<13} {pairs:>4} pairs x {count:<3} {measured.seconds:7.2f} s wall "
        f"{measured.cpu_seconds:7.2f} s cpu {measured.peak_rss_bytes / 2**20:6.0f} MB  "
        f"{passed} passed, foreign load {measured.foreign_share:.0%}",
        file=sys.stderr,
        flush=True,
    )


def rounds(
    names: list[str],
    pairs_sizes: list[int],
    count: int,
    round_count: int,
    xdist: bool,
    seed: int,
    shape: str = "project",
) -> dict[str, ToolRecord]:
    records = {name: ToolRecord() for name in names}
    with tempfile.TemporaryDirectory(prefix="ctxeval-compare-") as tmp:
        root = Path(tmp)
        runs = root / "runs"
        runs.mkdir()
        conversations: dict[int, list[Conversation]] = {
            pairs: shaped_workload(shape, count, pairs, seed) for pairs in pairs_sizes
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
            print(f"{shape}: round {round_no}/{round_count}", file=sys.stderr)
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
        peers = {n: r for n, r in records.items() if n not in HARNESS_RUNS and not r.failed}
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
    parser.add_argument(
        "--shapes",
        default=",".join(SHAPES),
        help=f"comma-separated workload shapes, from: {', '.join(SHAPES)} (default: all)",
    )
    parser.add_argument(
        "--guard-retries",
        type=int,
        default=GUARD_RETRIES,
        help=f"runs again a run under foreign load above {FOREIGN_LIMIT * 100:.0f}%% (default "
        f"{GUARD_RETRIES}; 0 only records the load)",
    )
    parser.add_argument("--no-xdist", action="store_true", help="skip the `-n 2` runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.conversations, args.rounds = 6, 1
    names = [name.strip() for name in args.tools.split(",") if name.strip()]
    unknown = [name for name in names if name not in TOOLS]
    if unknown:
        parser.error(f"--tools: unknown {', '.join(unknown)}; expected some of {', '.join(TOOLS)}")
    args.names = names
    args.shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
    bad = [shape for shape in args.shapes if shape not in SHAPES]
    if bad or not args.shapes:
        parser.error(f"--shapes: unknown {', '.join(bad)}; expected some of {', '.join(SHAPES)}")
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
    global GUARD_RETRIES
    GUARD_RETRIES = max(args.guard_retries, 0)
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
    # The floors are what pytest-ctxeval's model-free work is set against: only for its runs.
    item = pytest_item_floor() if HARNESS in names else 0.0
    by_shape: dict[str, dict[str, ToolRecord]] = {}
    for shape in args.shapes:
        load_before = os.getloadavg()[0]
        records = rounds(
            names,
            args.pairs_sizes,
            args.conversations,
            args.rounds,
            not args.no_xdist and shape == args.shapes[0],  # -n 2: on the first shape
            args.seed,
            shape,
        )
        load = (load_before, os.getloadavg()[0])
        floors = {}
        for pairs in args.pairs_sizes if HARNESS in names else []:
            conversations = shaped_workload(shape, args.conversations, pairs, args.seed)
            floors[pairs] = Floors(
                tokenizing_floor(conversations), yaml_loading_floor(conversations), item
            )
        print(f"\n=== shape: {shape} ===")
        report(
            records, unavailable, args.pairs_sizes, args.conversations, args.rounds, load, floors
        )
        by_shape[shape] = records
    shape_summary(by_shape, args.pairs_sizes, args.conversations)
    failed = any(r.failed for records in by_shape.values() for r in records.values())
    return 1 if failed else 0


def shape_summary(
    by_shape: dict[str, dict[str, ToolRecord]], pairs_sizes: list[int], count: int
) -> None:
    """Every per-sample ratio, peer / pytest-ctxeval, per shape, size and strategy
    (wall; CPU in brackets), and the worst of them: the figure to quote."""
    print("\nper-sample ratios, peer / pytest-ctxeval (above 1.00x pytest-ctxeval is faster)")
    worst: tuple[float, str] | None = None
    for shape, records in by_shape.items():
        for harness in HARNESS_RUNS:
            base = records.get(harness)
            if base is None or base.failed:
                print(f"  {shape}: {LABELS[harness]} not measured")
                continue
            for pairs in pairs_sizes:
                ours = {k: per_sample(getattr(base, k), pairs, count) for k in ("wall", "cpu")}
                cells = []
                for name, record in records.items():
                    if name in HARNESS_RUNS or record.failed:
                        continue
                    ratio = {
                        k: per_sample(getattr(record, k), pairs, count) / ours[k] for k in ours
                    }
                    cells.append(f"{name} {ratio['wall']:.2f}x [{ratio['cpu']:.2f}x]")
                    where = f"{shape} @{pairs} pairs, {LABELS[harness]}, against {name}"
                    if worst is None or ratio["wall"] < worst[0]:
                        worst = (ratio["wall"], where)
                foreign = statistics.median(base.foreign) if base.foreign else 0.0
                print(
                    f"  {shape:<15} @{pairs:<4} {harness:<17} {ours['wall'] * 1000:6.1f} ms: "
                    f"{'; '.join(cells) or 'no peer'} (foreign load {foreign:.0%})"
                )
    if worst is not None:
        print(f"  worst: {worst[0]:.2f}x, {worst[1]}")


if __name__ == "__main__":
    sys.exit(main())
