"""``ctxeval conform STRATEGY``: the window rules over the invariant sessions
and the bundled suite on the mock model, in one table; exit 1 on a broken rule."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_scenarios import agent_recall_scenario

from pytest_ctxeval.cli import main

ROOT = Path(__file__).resolve().parent.parent
# The langchain-core release .ci/run installs with `pip install --target`: the
# version the bug report of langchain-ai/langchain#33245 was filed against.
OLD_LANGCHAIN_CORE = ROOT / ".ci" / ".old-langchain-core"
OLD_VERSION = "0.3.77"

needs_langchain = pytest.mark.skipif(
    importlib.util.find_spec("langchain_core") is None,
    reason='langchain-core is not installed: pip install -e ".[langchain]"',
)

SCENARIO = agent_recall_scenario("launch-code", with_cat=False)


def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "launch.yaml").write_text(SCENARIO, "utf-8")
    return folder


def test_a_sound_strategy_conforms_and_the_table_has_the_suite_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["conform", "sliding(turns=3)", "--suite", str(suite(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    header = "strategy rule violations passed context_loss errors tokens cache hit"
    assert lines[0].split() == header.split()
    full, sliding = lines[1].split(), lines[2].split()
    assert full[:3] == ["full", "-", "1/1"] and full[3] == "0"
    # sliding forgets the launch code said at the start: a context loss against full.
    assert sliding[:4] == ["sliding[turns:3]", "none", "0/1", "1"]
    assert int(sliding[5].replace(",", "")) < int(full[5].replace(",", ""))
    assert sliding[6].endswith("%")


def test_a_broken_strategy_fails_with_the_rule_and_its_first_window(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["conform", "tests.strategies_for_conform:DropsToolCalls", "--no-suite"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "tool-pairs" in out.splitlines()[2]
    assert "first offending window:" in out
    window = out.split("first offending window:")[1].splitlines()
    assert any(" tool answers call_" in line for line in window)
    assert not any(" calls call_" in line for line in window)


def test_a_strategy_that_raises_is_a_violation_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["conform", "tests.strategies_for_conform:Raises", "--no-suite"])
    captured = capsys.readouterr()
    assert code == 1
    assert "window: the strategy raised RuntimeError: no window today" in captured.out
    assert "Traceback" not in captured.out + captured.err


def test_an_unknown_strategy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conform", "slidng", "--no-suite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxeval conform: ") and "sliding" in err and "\n" == err[-1]


def conform_subprocess(strategy: str, pythonpath: Path | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    code = (
        "import sys, langchain_core; from pytest_ctxeval.cli import main; "
        "print('langchain-core', langchain_core.__version__); sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "conform", strategy, "--no-suite"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


@needs_langchain
@pytest.mark.skipif(
    not OLD_LANGCHAIN_CORE.is_dir(),
    reason=f"no {OLD_LANGCHAIN_CORE.relative_to(ROOT)}: .ci/run installs langchain-core "
    f"{OLD_VERSION} there (pip install --no-deps --target .ci/.old-langchain-core "
    f'"langchain-core=={OLD_VERSION}")',
)
@pytest.mark.parametrize("release", ["pinned", "current"])
def test_conform_catches_trim_messages_orphaning_a_tool_result(release: str) -> None:
    """trim_messages(strategy="last") with LangChain's default start_on=None
    keeps a tool result whose call it cut (langchain-ai/langchain#33245, open:
    reported on 0.3.77, still so in the current release); start_on="human",
    the documented workaround and this adapter's default, keeps the pairs."""
    path = OLD_LANGCHAIN_CORE if release == "pinned" else None
    broken = conform_subprocess("langchain-trim(start_on=null)", path)
    version = broken.stdout.splitlines()[0]
    if release == "pinned":
        assert version == f"langchain-core {OLD_VERSION}", broken.stdout + broken.stderr
    else:
        assert version != f"langchain-core {OLD_VERSION}"
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "tool-pairs" in broken.stdout and "without its call" in broken.stdout
    window = broken.stdout.split("first offending window:")[1].splitlines()
    assert window[2].lstrip().startswith("[1] tool answers call_"), broken.stdout
    sound = conform_subprocess("langchain-trim", path)
    assert sound.returncode == 0, sound.stdout + sound.stderr
    assert sound.stdout.splitlines()[0] == version
    assert "tool-pairs" not in sound.stdout
