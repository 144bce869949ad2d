"""Shared helpers for the plugin's behavioural tests.

Plugin tests run pytest in-process with ``pytester`` on a small project the
test writes: a ``pytest.ini`` and scenario YAML under ``scenarios/``.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

# Test data, not tests: `pytest tests` names this folder, and a folder named on
# the command line is searched for scenario files, so the broken-file corpus
# and the importer fixtures must be kept out of collection.
collect_ignore = ["fixtures"]

# The fields every result record has (a public contract).
RECORD_FIELDS = frozenset(
    {
        "run_id",
        "scenario",
        "strategy",
        "model",
        "probe",
        "repeat",
        "verdict",
        "classification",
        "answer",
        "ground_truth_answer",
        "expected",
        "fact_survival",
        "prompt_tokens",
        "cumulative_input_tokens",
        "peak_prompt_tokens",
        "cached_prefix_tokens",
        "cost_usd",
        "latency_s",
        "llm_calls",
        "memory_retrievals",
        "error",
        "budget",
    }
)

BUILTIN_STRATEGIES = ("full", "headtail", "sliding", "truncate")

# How each end-to-end test runs: no xdist flag, xdist loaded but off, two workers.
XDIST_MODES = {"no-flag": (), "n0": ("-n", "0"), "n2": ("-n", "2")}


@pytest.fixture(scope="session")
def _preloaded_modules() -> None:
    """Import the heavy modules once, before any pytester snapshot.

    pytester removes modules first imported during a test from sys.modules at
    teardown; without this, every in-process run would import litellm
    (about 3 s) again.
    """
    from pytest_ctxeval.llm._litellm import get_litellm
    from pytest_ctxeval.llm.tokens import count_text_tokens

    get_litellm()
    count_text_tokens("warm up the tokenizer")
    import pytest_ctxeval.evaluate.runner  # noqa: F401
    import pytest_ctxeval.report.html  # noqa: F401  (pandas, jinja2)
    import pytest_ctxeval.report.terminal  # noqa: F401
    import pytest_ctxeval.scenario.loader  # noqa: F401


class CtxProject:
    """A throw-away pytest project with scenarios, run in-process."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        self.ini(pythonpath=".")

    def ini(self, **settings: str) -> Path:
        """(Re)write pytest.ini; ``pythonpath = .`` lets xdist workers import
        modules written in the project root."""
        lines = ["[pytest]", *(f"{k} = {v}" for k, v in settings.items())]
        return self.write("pytest.ini", "\n".join(lines) + "\n")

    def write(self, relpath: str, text: str) -> Path:
        path = self.path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def scenario(self, name: str, text: str) -> Path:
        """Write ``scenarios/<name>.yaml``."""
        return self.write(f"scenarios/{name}.yaml", text)

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)

    def collect_ids(self, *args: str) -> list[str]:
        result = self.run("--collect-only", "-q", *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        return item_ids(result)

    def results(self, relpath: str = "reports/results.jsonl") -> list[dict[str, Any]]:
        return read_jsonl(self.path / relpath)


@pytest.fixture
def ctx(pytester: pytest.Pytester, _preloaded_modules: None) -> CtxProject:
    return CtxProject(pytester)


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def xdist_args(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """Command-line flags for one of the three ways every end-to-end test runs."""
    return XDIST_MODES[request.param]


def plain_session(tmp_path: Path) -> Any:
    """A ``CtxSession`` on the oracle and ``full``, its outputs in ``tmp_path``,
    made outside any pytest run (for what a controller or worker does alone)."""
    from pytest_ctxeval.options import CtxOptions
    from pytest_ctxeval.session import CtxSession

    options = CtxOptions(
        strategies="full",
        model="ctxeval/oracle",
        api_base=None,
        report=tmp_path / "report.html",
        results=tmp_path / "results.jsonl",
        fail_on="context_loss",
        scenario_dirs=(),
    )
    return CtxSession(options=options, rootdir=tmp_path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def item_ids(result: pytest.RunResult) -> list[str]:
    """Node ids printed by ``--collect-only -q``."""
    return [line for line in result.outlines if "::" in line and not line.startswith(" ")]


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def assert_no_traceback(result: pytest.RunResult) -> None:
    text = output(result)
    for marker in ("Traceback", "site-packages", "_pytest"):
        assert marker not in text, f"{marker!r} in output:\n{text}"


def by_key(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Records keyed by (scenario, strategy, probe); a key seen twice is an error."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for record in records:
        key = (record["scenario"], record["strategy"], record["probe"])
        assert key not in out, f"two records for {key}"
        out[key] = record
    return out


def summary_line(result: pytest.RunResult, strategy: str) -> str:
    """The ctxeval terminal-summary line of one strategy."""
    pattern = re.compile(rf"^{re.escape(strategy)}\s+passed ")
    lines = [line for line in result.outlines if pattern.match(line)]
    assert len(lines) == 1, f"expected one summary line for {strategy}: {result.outlines}"
    return lines[0]


def twin_windows(
    make: Callable[[], Any],
    forget: Callable[[Any], None],
    sessions: Iterable[tuple[list[dict[str, Any]], Iterable[int]]],
    revise_at: int,
) -> Iterator[tuple[int, Any, Any]]:
    """(message index, window, twin's window) after each message of each
    (messages, new-chat starts) session, fed to a strategy and to a twin
    that ``forget`` makes build its next window from the whole history.  At
    ``revise_at`` both get a pipeline's revision of message 3."""
    from pytest_ctxeval.strategies.invariants import oracle_context

    for messages, starts in sessions:
        extending, afresh = make(), make()
        for strategy in (extending, afresh):
            strategy.setup(oracle_context())
        for index, message in enumerate(messages):
            for strategy in (extending, afresh):
                if index in starts:
                    strategy.end_session()
                strategy.add(dict(message))
                if index == revise_at:  # a pipeline's earlier stage condenses a message
                    strategy.revise(3, {**strategy.history[3], "content": "condensed"})
            forget(afresh)
            yield index, extending.window(), afresh.window()


def fed(strategy: Any, messages: list[dict[str, Any]], starts: Iterable[int]) -> Iterator[int]:
    """Set ``strategy`` up on the oracle and feed it a session message by
    message (a copy of each, a new chat at each of ``starts``), yielding the
    index of each message once it is added: the caller builds the window."""
    from pytest_ctxeval.strategies.invariants import oracle_context

    strategy.setup(oracle_context())
    new_chats = set(starts)
    for index, message in enumerate(messages):
        if index in new_chats:
            strategy.end_session()
        strategy.add(dict(message))
        yield index
