"""The tools compared: how each is set up, fed the workload, run, and checked.

Every run is checked for the work it did (every sample scored and passed):
a tool that fails fast would otherwise look fast.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .workload import Conversation, write_ctxeval, write_inspect, write_promptfoo

HERE = Path(__file__).resolve().parent
PEERS = HERE.parent / ".peers"  # git-ignored: made by `compare.py --setup`
PEER_VENV = PEERS / "venv"
PEER_PYTHON = PEER_VENV / "bin" / "python"
INSPECT = PEER_VENV / "bin" / "inspect"
PROMPTFOO = PEERS / "node" / "node_modules" / ".bin" / "promptfoo"
TIKTOKEN_CACHE = PEERS / "tiktoken"
# Inspect's mock model counts tokens with tiktoken's o200k_base, which tiktoken
# would download; the same file ships in litellm's wheel, named by its URL's sha1.
O200K_FILE = "fb374d419588a4632f3f557e76b4b70aebbca790"


class ToolFailed(Exception):
    """A run that did not do the whole workload: its numbers would mean nothing."""


@dataclass(frozen=True)
class Run:
    argv: list[str]
    cwd: Path
    env: dict[str, str]


@dataclass(frozen=True)
class Tool:
    name: str
    missing: Callable[[], str | None]  # why it cannot run, or None
    prepare: Callable[[list[Conversation], Path], Path]  # writes the workload, returns its dir
    command: Callable[[Path, Path, int], Run]  # (workload dir, fresh output dir, -n workers)
    passed: Callable[[Path, str], int]  # (output dir, console output) -> samples passed


def offline_env(**extra: str) -> dict[str, str]:
    """The environment of every run: nothing may reach the network or phone
    home.  Python caches compiled modules, as on a user's machine (where
    installed packages come compiled), even where the environment turns that
    off: otherwise every run of a Python tool would compile its modules again
    and measure the compiler.  The cache is a folder of its own."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "NO_PROXY", "no_proxy", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PYTHONPYCACHEPREFIX=str(PEERS / "pycache"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HUB_OFFLINE="1",
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


# --- pytest-ctxeval -------------------------------------------------------------------


def _ctxeval_prepare(conversations: list[Conversation], folder: Path) -> Path:
    write_ctxeval(conversations, folder / "scenarios")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the rootdir is here
    return folder


def _ctxeval_command(strategy: str) -> Callable[[Path, Path, int], Run]:
    def command(workload: Path, out: Path, workers: int) -> Run:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "scenarios",
            f"--ctx-strategy={strategy}",
            "--ctx-model=ctxeval/oracle",
            "-p",
            "no:cacheprovider",
            f"--ctx-results={out / 'results.json'}",
            f"--ctx-report={out / 'report.html'}",
        ]
        if workers > 1:
            argv += ["-n", str(workers)]
        return Run(argv, workload, offline_env())

    return command


def _ctxeval_records(out: Path) -> list[dict[str, str]]:
    results = out / "results.json"
    if not results.exists():
        return []
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def _ctxeval_passed(out: Path, _output: str) -> int:
    records = _ctxeval_records(out)
    return sum(r["verdict"] == "pass" and r["classification"] == "ok" for r in records)


def _ctxeval_evaluated(out: Path, _output: str) -> int:
    """Samples scored with the whole evaluation behind them.  Under ``headtail``
    the needle's turn can go to memory where the listing no longer shows it,
    so a context-loss verdict (the ground truth passed) is the strategy's
    result, not a run that stopped short; an error is."""
    return sum(
        (r["verdict"], r["classification"]) in {("pass", "ok"), ("fail", "context_loss")}
        for r in _ctxeval_records(out)
    )


# --- Inspect AI -----------------------------------------------------------------------


def _inspect_missing() -> str | None:
    if not INSPECT.exists() or not (TIKTOKEN_CACHE / O200K_FILE).exists():
        return "not set up (run --setup)"
    return None


def _inspect_prepare(conversations: list[Conversation], folder: Path) -> Path:
    write_inspect(conversations, folder / "samples.jsonl")
    # `inspect eval` takes the task file by a relative path only.
    shutil.copy(HERE / "inspect_task.py", folder / "inspect_task.py")
    return folder


def _inspect_command(workload: Path, out: Path, _workers: int) -> Run:
    argv = [str(INSPECT), "eval", "inspect_task.py", "--log-dir", str(out), "--display", "plain"]
    env = offline_env(
        CTXEVAL_BENCH_SAMPLES=str(workload / "samples.jsonl"),
        TIKTOKEN_CACHE_DIR=str(TIKTOKEN_CACHE),
        PATH=f"{PEER_VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return Run(argv, workload, env)


def _inspect_passed(out: Path, _output: str) -> int:
    import subprocess

    counted = subprocess.run(
        [str(PEER_PYTHON), str(HERE / "inspect_passes.py"), str(out)],
        capture_output=True,
        text=True,
        env=offline_env(),
    )
    if counted.returncode != 0:
        raise ToolFailed(f"could not read Inspect's log: {counted.stderr.strip()[-500:]}")
    return int(json.loads(counted.stdout)["passed"])


# --- promptfoo ------------------------------------------------------------------------


def _promptfoo_missing(language: str) -> Callable[[], str | None]:
    def missing() -> str | None:
        if not PROMPTFOO.exists() or (language == "py" and not PEER_PYTHON.exists()):
            return "not set up (run --setup)"
        if shutil.which("node") is None:
            return "node is not installed (apt-get install nodejs npm)"
        return None

    return missing


def _promptfoo_prepare(language: str) -> Callable[[list[Conversation], Path], Path]:
    def prepare(conversations: list[Conversation], folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        provider = folder / f"promptfoo_provider.{language}"
        shutil.copy(HERE / provider.name, provider)
        write_promptfoo(conversations, folder, f"file://{provider}")
        return folder

    return prepare


def _promptfoo_command(workload: Path, out: Path, _workers: int) -> Run:
    argv = [
        str(PROMPTFOO),
        "eval",
        "-c",
        str(workload / "promptfooconfig.json"),
        "--no-cache",
        "--no-progress-bar",
        "--no-write",
        "--no-table",
        "--no-share",
    ]
    # Its settings and database go to the fresh output dir, not the user's home.
    # With telemetry off it still posts one "telemetry disabled" event; a proxy on
    # a closed loopback port makes that fail at once, without leaving the machine.
    env = offline_env(
        PROMPTFOO_CONFIG_DIR=str(out),
        PROMPTFOO_PYTHON=str(PEER_PYTHON),
        **{name: CLOSED_PROXY for name in PROXY_VARIABLES},
    )
    return Run(argv, workload, env)


CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
_PASSED = re.compile(r"(\d+) passed")
_FAILED = re.compile(r"(\d+) (failed|errors?)\b")


def _promptfoo_passed(_out: Path, output: str) -> int:
    passed = _PASSED.findall(output)
    failed = sum(int(n) for n, _ in _FAILED.findall(output))
    return int(passed[-1]) if passed and failed == 0 else 0


def _ready() -> str | None:
    return None


TOOLS: dict[str, Tool] = {
    "ctxeval": Tool("ctxeval", _ready, _ctxeval_prepare, _ctxeval_command("full"), _ctxeval_passed),
    "ctxeval-headtail": Tool(
        "ctxeval-headtail",
        _ready,
        _ctxeval_prepare,
        _ctxeval_command("headtail"),
        _ctxeval_evaluated,
    ),
    "inspect": Tool(
        "inspect", _inspect_missing, _inspect_prepare, _inspect_command, _inspect_passed
    ),
    "promptfoo-js": Tool(
        "promptfoo-js",
        _promptfoo_missing("js"),
        _promptfoo_prepare("js"),
        _promptfoo_command,
        _promptfoo_passed,
    ),
    "promptfoo-py": Tool(
        "promptfoo-py",
        _promptfoo_missing("py"),
        _promptfoo_prepare("py"),
        _promptfoo_command,
        _promptfoo_passed,
    ),
}
