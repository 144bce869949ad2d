"""The floors compare.py sets pytest-ctxeval's model-free work against: the
least any harness of this kind spends per sample (tokenizing every message once,
loading the scenario file, pytest's own handling of an item)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .tools import offline_env
from .workload import Conversation, write_ctxeval

# A floor is the least a run takes: best of many, so a busy spell does not raise it.
FLOOR_REPEATS = 20


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
