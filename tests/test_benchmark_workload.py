"""The peer benchmark's workload (benchmarks/compare.py) must stay a workload this harness
passes: if the generated scenarios stopped loading, or the needle stopped being findable, the
benchmark would time a failing run."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from conftest import CtxProject

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def peers() -> Iterator[ModuleType]:
    """benchmarks/peers, imported the way compare.py imports it."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        for module in ("peers.measure", "peers.tools", "peers.workload", "peers.shapes"):
            importlib.import_module(module)
        yield sys.modules["peers"]
    finally:
        sys.path.remove(str(BENCHMARKS))
        for name in [m for m in sys.modules if m == "peers" or m.startswith("peers.")]:
            del sys.modules[name]


def test_workload_passes_under_full_on_the_oracle_with_the_benchmark_command(
    ctx: CtxProject, peers: ModuleType
) -> None:
    conversations = peers.workload.workload(3, pairs=5, seed=1)
    tool = peers.tools.TOOLS["ctxeval"]
    tool.prepare(conversations, ctx.path)
    command = tool.command(ctx.path, ctx.path / "out", 1)
    assert command.argv[1:3] == ["-m", "pytest"]

    result = ctx.run(*command.argv[3:])

    result.assert_outcomes(passed=3)
    lines = (ctx.path / "out/results.json").read_text().splitlines()
    records = sorted((json.loads(line) for line in lines), key=lambda r: r["scenario"])
    assert [r["scenario"] for r in records] == [c.id for c in conversations]
    for record, conv in zip(records, conversations, strict=True):
        assert (record["strategy"], record["classification"]) == ("full", "ok")
        assert conv.answer in record["answer"]
    assert tool.passed(ctx.path / "out", "") == 3


def test_each_conversation_has_its_needle_early_and_a_question_for_it(peers: ModuleType) -> None:
    conv = peers.workload.conversation(4, pairs=50, seed=7)
    assert len(conv.messages) == 100
    assert [m["role"] for m in conv.messages[:4]] == ["user", "assistant"] * 2
    holders = [i for i, m in enumerate(conv.messages) if conv.answer in m["content"]]
    assert holders == [4]  # the user turn of the third pair, and nowhere else
    assert conv.chat()[-1] == {"role": "user", "content": conv.question}


def test_the_workload_is_the_same_for_the_same_seed_only(peers: ModuleType) -> None:
    make = peers.workload.workload
    assert make(3, 10, seed=1) == make(3, 10, seed=1)
    assert make(3, 10, seed=1) != make(3, 10, seed=2)


def test_peer_workload_files_carry_the_same_conversations(
    tmp_path: Path, peers: ModuleType
) -> None:
    conversations = peers.workload.workload(2, pairs=4, seed=3)
    samples_path = peers.workload.write_inspect(conversations, tmp_path / "samples.jsonl")
    samples = [json.loads(line) for line in samples_path.read_text().splitlines()]
    assert [(s["input"], s["target"]) for s in samples] == [
        (c.chat(), c.answer) for c in conversations
    ]
    config_path = peers.workload.write_promptfoo(conversations, tmp_path, "file://p.js")
    config = json.loads(config_path.read_text())
    assert config["providers"] == ["file://p.js"]
    # The tests are a file the config names, as promptfoo's docs set up a dataset:
    # inline, every string of them would be a template promptfoo builds.
    assert config["tests"] == "file://tests.json"
    tests = json.loads((tmp_path / "tests.json").read_text())
    assert [(t["vars"]["messages"], t["assert"]) for t in tests] == [
        (c.chat(), [{"type": "icontains", "value": c.answer}]) for c in conversations
    ]


def test_the_python_promptfoo_mock_finds_the_needle_in_the_prompt(peers: ModuleType) -> None:
    # promptfoo loads the file by path, as a top-level module: so does this test.
    spec = importlib.util.spec_from_file_location(
        "promptfoo_provider", BENCHMARKS / "peers" / "promptfoo_provider.py"
    )
    assert spec is not None and spec.loader is not None
    provider = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provider)
    call_api = provider.call_api
    conv = peers.workload.conversation(0, pairs=20, seed=5)
    reply = call_api(json.dumps(conv.chat()), {}, {})
    assert conv.answer in reply["output"]


@pytest.mark.parametrize(
    ("console", "passed"),
    [
        ("Results:\n  ✓ 50 passed (100%)\n  0 failed (0%)\n  0 errors (0%)", 50),
        ("Results:\n  ✓ 48 passed (96%)\n  2 failed (4%)\n  0 errors (0%)", 0),
        ("Error: Cannot find module 'promptfoo_provider.js'", 0),
    ],
)
def test_a_promptfoo_run_counts_only_when_nothing_failed(
    peers: ModuleType, console: str, passed: int
) -> None:
    assert peers.tools.TOOLS["promptfoo-js"].passed(Path("."), console) == passed


def test_measured_peak_rss_covers_the_child_processes(tmp_path: Path, peers: ModuleType) -> None:
    # A parent that holds little starts a child that holds 200 MB: the tree's peak counts it.
    child = "b = bytearray(200 * 2**20); import time; time.sleep(0.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    measured = peers.measure.run(
        [sys.executable, "-c", parent], tmp_path, {}, tmp_path / "console.log"
    )
    assert measured.returncode == 0
    assert measured.peak_rss_bytes >= 200 * 2**20


def test_a_peer_not_set_up_is_reported_not_a_crash(
    peers: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(peers.tools, "PROMPTFOO", Path("/nonexistent/promptfoo"))
    monkeypatch.setattr(peers.tools, "INSPECT", Path("/nonexistent/inspect"))
    spec = importlib.util.spec_from_file_location("compare", BENCHMARKS / "compare.py")
    assert spec is not None and spec.loader is not None
    compare = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "compare", compare)  # its dataclasses look it up there
    spec.loader.exec_module(compare)

    exit_code = compare.main(["--tools", "inspect,promptfoo-js", "--no-xdist"])

    assert exit_code == 0
    table = capsys.readouterr().out
    for label in (r"Inspect AI \(mockllm/model\)", r"promptfoo \(JS provider\)"):
        assert re.search(rf"^{label} +\| not set up \(run --setup\)$", table, re.M), table


@pytest.mark.parametrize("name", ["ctxeval", "inspect", "promptfoo-js", "promptfoo-py"])
def test_every_run_is_kept_off_the_network(
    tmp_path: Path, peers: ModuleType, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("NO_PROXY", "*")  # would let promptfoo's telemetry post go out
    env = peers.tools.TOOLS[name].command(tmp_path, tmp_path / "out", 1).env
    assert env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert env["PROMPTFOO_DISABLE_TELEMETRY"] == env["PROMPTFOO_DISABLE_UPDATE"] == "1"
    if name.startswith("promptfoo"):
        # promptfoo posts one event even with telemetry off: it must hit a closed local port.
        assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://127.0.0.1:9"
        assert "NO_PROXY" not in env and "no_proxy" not in env
        assert env["PROMPTFOO_CONFIG_DIR"] == str(tmp_path / "out")


SHAPE_ROLES = {
    "project": "user",
    "long-assistant": "assistant",
    "tool-json": "tool",
    "tool-logs": "tool",
    "short-turns": "assistant",
}


@pytest.mark.parametrize("shape", sorted(SHAPE_ROLES))
def test_each_shape_plants_one_needle_in_its_role(peers: ModuleType, shape: str) -> None:
    [conv] = peers.shapes.shaped_workload(shape, 1, pairs=20, seed=3)
    holders = [m["role"] for m in conv.messages if conv.answer in m["content"]]
    assert holders == [SHAPE_ROLES[shape]]
    pairs = sum(m["role"] == "user" for m in conv.messages)
    assert pairs == (80 if shape == "short-turns" else 20)
    assert conv.chat()[-1] == {"role": "user", "content": conv.question}


def test_the_shapes_are_the_sizes_they_say(peers: ModuleType) -> None:
    def words(shape: str, role: str) -> list[int]:
        [conv] = peers.shapes.shaped_workload(shape, 1, pairs=10, seed=1)
        return [len(m["content"].split()) for m in conv.messages if m["role"] == role]

    assert min(words("long-assistant", "assistant")) >= 300
    encoding = importlib.import_module("pytest_ctxeval.llm.local_tokenizer").local_encoding()
    for shape in ("tool-json", "tool-logs"):
        [conv] = peers.shapes.shaped_workload(shape, 1, pairs=10, seed=1)
        outputs = [m["content"] for m in conv.messages if m["role"] == "tool"]
        assert outputs and all(len(encoding.encode_ordinary(o)) >= 2000 for o in outputs)
    assert max(words("short-turns", "user")) <= 2


@pytest.mark.parametrize("shape", ["long-assistant", "tool-json", "tool-logs", "short-turns"])
def test_every_shape_passes_under_full_on_the_oracle(
    ctx: CtxProject, peers: ModuleType, shape: str
) -> None:
    conversations = peers.shapes.shaped_workload(shape, 2, pairs=6, seed=1)
    tool = peers.tools.TOOLS["ctxeval"]
    tool.prepare(conversations, ctx.path)
    command = tool.command(ctx.path, ctx.path / "out", 1)

    ctx.run(*command.argv[3:]).assert_outcomes(passed=2)

    assert tool.passed(ctx.path / "out", "") == 2


def test_the_peer_mocks_find_a_needle_in_a_tool_output(peers: ModuleType) -> None:
    spec = importlib.util.spec_from_file_location(
        "promptfoo_provider", BENCHMARKS / "peers" / "promptfoo_provider.py"
    )
    assert spec is not None and spec.loader is not None
    provider = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(provider)
    [conv] = peers.shapes.shaped_workload("tool-logs", 1, pairs=8, seed=2)
    assert conv.answer in provider.call_api(json.dumps(conv.chat()), {}, {})["output"]


def test_a_run_under_foreign_load_is_run_again_and_the_quietest_kept(
    tmp_path: Path, peers: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("compare", BENCHMARKS / "compare.py")
    assert spec is not None and spec.loader is not None
    compare = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "compare", compare)
    spec.loader.exec_module(compare)
    loads = iter([0.9, 0.6, 0.8])
    seen = []

    def fake_run(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> object:
        share = next(loads)
        seen.append(share)
        return peers.measure.Measured(1.0, 1.0, 0, 0, "", foreign_share=share)

    monkeypatch.setattr(compare, "run", fake_run)
    tool = peers.tools.TOOLS["ctxeval"]
    fake_tool = peers.tools.Tool(
        "fake", lambda: None, tool.prepare, tool.command, lambda out, output: 1
    )
    measured, passed = compare.measure_once(fake_tool, tmp_path, tmp_path, 1)
    assert seen == [0.9, 0.6, 0.8]  # above the limit every time: 1 + 2 retries
    assert (measured.foreign_share, passed) == (0.6, "1/1")


def test_compare_help_names_every_shape(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("compare", BENCHMARKS / "compare.py")
    assert spec is not None and spec.loader is not None
    compare = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "compare", compare)
    spec.loader.exec_module(compare)
    with pytest.raises(SystemExit) as exited:
        compare.parse_args(["--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--shapes SHAPES" in text
    assert "above 35% (default 2" in text
