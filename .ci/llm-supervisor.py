"""Run the CI model server as a child process that never outlives CI.

    python .ci/llm-supervisor.py --watch PID --grace SECONDS -- COMMAND...

.ci/llm-server.sh starts the server through this script, with only the
standard library, in the server's own venv. The server runs:

- in a process group of its own, so a Ctrl-C typed at the shell that started
  it does not reach it, and stopping it reaches anything it started;
- with PR_SET_PDEATHSIG=SIGKILL (Linux), so the kernel kills it when this
  supervisor dies, even by SIGKILL.

The supervisor stops the server (SIGTERM to its group, then SIGKILL after
--grace seconds: llama.cpp's server can ignore SIGTERM while it generates)
when it receives SIGTERM or SIGHUP, or when the --watch process ends (CI's
shell, killed or not). It ignores SIGINT, for the same reason as the group.
If the server exits by itself, the supervisor exits with its status.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from types import FrameType

PR_SET_PDEATHSIG = 1  # from <sys/prctl.h>
POLL_SECONDS = 0.2


def log(message: str) -> None:
    print(f"llm-supervisor: {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the CI model server; stop it with CI.")
    parser.add_argument("--watch", type=int, default=0, help="stop when this pid ends (0: never)")
    parser.add_argument("--grace", type=float, default=5.0, help="seconds from SIGTERM to SIGKILL")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the server command")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no server command after --")
    return args


def pdeathsig_setter() -> Callable[..., int] | None:
    """libc's prctl, looked up before fork (loading a library in the child is unsafe)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def child_setup(supervisor_pid: int) -> Callable[[], None]:
    prctl = pdeathsig_setter()

    def setup() -> None:
        os.setpgid(0, 0)
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            # The supervisor may have died between fork and prctl: nothing would kill us then.
            if os.getppid() != supervisor_pid:
                os._exit(1)

    return setup


class Watched:
    """The process whose end stops the server (a pidfd where the kernel has them:
    no pid-reuse race, and an exited but unreaped process counts as ended)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd: int | None = None
        self.gone_at_start = False
        if pid > 0 and hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except ProcessLookupError:
                self.gone_at_start = True
            except OSError:  # an older kernel: poll the pid instead
                self.fd = None

    def ended(self, timeout: float) -> bool:
        if self.pid <= 0:
            time.sleep(timeout)
            return False
        if self.gone_at_start:
            return True
        if self.fd is not None:
            readable, _, _ = select.select([self.fd], [], [], timeout)
            return bool(readable)
        time.sleep(timeout)
        return not pid_alive(self.pid)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie has ended, though kill(0) succeeds
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def signal_group(server: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(server.pid, signum)


def stop(server: subprocess.Popen[bytes], grace: float, why: str) -> None:
    log(f"{why}: stopping the server (pid {server.pid}) with SIGTERM")
    signal_group(server, signal.SIGTERM)
    try:
        server.wait(grace)
    except subprocess.TimeoutExpired:
        log(f"still running after {grace:g}s: SIGKILL")
    # Also whatever the server started and left in its group.
    signal_group(server, signal.SIGKILL)
    server.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    stop_reason: list[str] = []

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        stop_reason.append(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, request_stop)
    watched = Watched(args.watch)
    server = subprocess.Popen(args.command, preexec_fn=child_setup(os.getpid()))
    log(f"server pid {server.pid}, watching pid {args.watch or 'none'}")
    while True:
        if stop_reason:
            stop(server, args.grace, f"received {stop_reason[0]}")
            return 0
        code = server.poll()
        if code is not None:
            log(f"the server exited by itself (status {code})")
            return code if code >= 0 else 128 - code
        if watched.ended(POLL_SECONDS):
            stop(server, args.grace, f"watched pid {args.watch} ended")
            return 0


if __name__ == "__main__":
    sys.exit(main())
