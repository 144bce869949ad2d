"""Run one command and measure it: wall time and the peak RSS of its whole process tree."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Measured:
    seconds: float
    cpu_seconds: float  # user + system, of the process and every descendant it waited for
    peak_rss_bytes: int
    returncode: int
    output: str
    foreign_share: float = 0.0  # of the machine's CPU, what other processes used meanwhile


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, read from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:  # the process ended between listing and reading
            continue
        # Fields after "(comm)": state, ppid, ... rss is the 22nd of them.
        fields = stat[stat.rindex(b")") + 2 :].split()
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * _PAGE
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (every core), from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """Run ``argv`` to the end; the output goes to ``log`` (a pipe could fill and stall it)."""
    peak = 0
    done = threading.Event()

    def sample(pid: int) -> None:
        nonlocal peak
        while not done.wait(POLL_SECONDS):
            peak = max(peak, tree_rss(pid))

    with log.open("wb") as out:
        busy_before = busy_seconds()
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        sampler = threading.Thread(target=sample, args=(process.pid,), daemon=True)
        sampler.start()
        # wait4 rather than wait: its ru_maxrss catches a peak between two samples.
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        busy = busy_seconds() - busy_before
        done.set()
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    capacity = seconds * (os.cpu_count() or 1)
    return Measured(
        foreign_share=max(0.0, busy - cpu) / capacity if capacity else 0.0,
        seconds=seconds,
        cpu_seconds=cpu,
        peak_rss_bytes=max(peak, usage.ru_maxrss * 1024),
        returncode=process.returncode,
        output=log.read_text(encoding="utf-8", errors="replace"),
    )
