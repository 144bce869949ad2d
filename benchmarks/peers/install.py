"""`compare.py --setup`: install the peers into benchmarks/.peers/, pinned, apart from the
project's own dependencies (a venv for Inspect AI, a node_modules for promptfoo)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

from .tools import HERE, O200K_FILE, PEER_PYTHON, PEER_VENV, PEERS, TIKTOKEN_CACHE

PIP_LOCK = HERE / "requirements-inspect.txt"  # inspect-ai and every dependency, pinned
# promptfoo at an exact version; its own dependencies follow its ranges (a
# lock file of them would be a 300 KB generated file in the repository).
NPM_FILES = ("package.json",)
# promptfoo 0.121.20 declares node ^20.20.0 || >=22.22.0.
MIN_NODE = (20, 20)


class SetupError(Exception):
    pass


def _run(argv: list[str], cwd: Path | None = None) -> None:
    print("$", " ".join(argv), flush=True)
    done = subprocess.run(argv, cwd=cwd)
    if done.returncode != 0:
        raise SetupError(f"{argv[0]} exited {done.returncode}")


def _node_version() -> tuple[int, ...] | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    out = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    return tuple(int(part) for part in out.strip().lstrip("v").split(".")[:2])


def _litellm_tokenizers() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise SetupError("litellm is not importable: run --setup with the project's venv Python")
    return Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"


def setup() -> None:
    PEERS.mkdir(exist_ok=True)
    if not PEER_PYTHON.exists():
        _run([sys.executable, "-m", "venv", str(PEER_VENV)])
    _run([str(PEER_PYTHON), "-m", "pip", "install", "-q", "-r", str(PIP_LOCK)])

    TIKTOKEN_CACHE.mkdir(exist_ok=True)
    shutil.copy(_litellm_tokenizers() / O200K_FILE, TIKTOKEN_CACHE / O200K_FILE)

    version = _node_version()
    if version is None:
        raise SetupError("node and npm are needed for promptfoo: apt-get install nodejs npm")
    if version < MIN_NODE:
        raise SetupError(
            f"node {'.'.join(map(str, version))} is too old for promptfoo 0.121.20 "
            f"(needs {'.'.join(map(str, MIN_NODE))} or newer)"
        )
    node = PEERS / "node"
    node.mkdir(exist_ok=True)
    for name in NPM_FILES:
        shutil.copy(HERE / name, node / name)
    _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=node)
    print(f"peers installed in {PEERS}")
