"""Every file a run reads is untrusted input: invalid Unicode in a cassette,
a scenario or a server's answer, a preset alias bomb, a baseline with NaN or
a missing field or an unknown version, a Retry-After of a day.  Each is one
clean error naming the file (or the item); none is a traceback or a hang."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import assert_no_traceback, output, read_jsonl
from fake_openai_server import FakeOpenAIServer, Reply, error, reply

from pytest_ctxeval.llm.client import ModelClient, ModelError

SCENARIO = """
    id: recall
    turns:
      - user: "The launch code is ZEBRA-42."
      - assistant: Noted.
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def real_model(server: FakeOpenAIServer) -> tuple[str, ...]:
    return ("--ctx-model=openai/test-model", f"--ctx-api-base={server.url}")


# -- invalid Unicode ------------------------------------------------------------------------


def test_a_cassette_with_a_lone_surrogate_is_an_error_naming_the_file(ctx, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    ctx.scenario("recall", SCENARIO)
    server.responder = lambda body: reply("The launch code is ZEBRA-42.")
    first = ctx.run("--ctx-strategy=full", *real_model(server))
    assert first.ret == 0, output(first)
    (cassette,) = (ctx.path / "reports" / "cassettes").glob("*.json")
    text = cassette.read_text(encoding="utf-8")
    cassette.write_text(text.replace("ZEBRA-42.", "ZEBRA-42 \\ud800"), encoding="utf-8")
    result = ctx.run("--ctx-strategy=full", *real_model(server), "--ctx-record=none")
    assert_no_traceback(result)
    assert "INTERNALERROR" not in output(result)
    (record,) = read_jsonl(ctx.path / "reports" / "results.jsonl")
    assert record["verdict"] == "error"
    assert cassette.name in record["error"]
    assert "lone surrogate U+D800" in record["error"]
    assert "response.content" in record["error"]


def test_a_server_answer_with_a_lone_surrogate_is_that_items_error(ctx, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    ctx.scenario("recall", SCENARIO)
    server.responder = lambda body: reply("ZEBRA-42 \ud800")
    result = ctx.run("--ctx-strategy=full", *real_model(server))
    assert_no_traceback(result)
    (record,) = read_jsonl(ctx.path / "reports" / "results.jsonl")
    assert record["verdict"] == "error"
    assert "lone surrogate U+D800" in record["error"], record["error"]
    assert (ctx.path / "reports" / "ctxeval.html").is_file()


def test_a_scenario_with_a_lone_surrogate_is_an_error_at_its_line(ctx):
    ctx.scenario("bad", 'id: bad\nturns:\n  - user: "caf\\ud800e"\nprobes:\n  - {id: p, user: q}\n')
    result = ctx.run("--ctx-strategy=full")
    assert_no_traceback(result)
    assert "scenarios/bad.yaml:3:11: a lone surrogate U+D800" in output(result)


@pytest.mark.parametrize("escape", ["\\ud800", "\\U0000DC00", "\\uD83D"])
def test_every_escape_that_makes_a_lone_surrogate_is_refused(escape):
    from pytest_ctxeval.scenario.errors import ScenarioError
    from pytest_ctxeval.scenario.loader import parse_conversations

    text = f'id: bad\nturns:\n  - user: "caf{escape}e"\nprobes:\n  - {{id: p, user: q}}\n'
    with pytest.raises(ScenarioError, match="bad.yaml:3:11: a lone surrogate"):
        parse_conversations(text, "bad.yaml")


# -- presets --------------------------------------------------------------------------------

BOMB = """\
name: bomb
kind: sliding
params:
  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
  h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
  i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""

LOAD_PRESETS = """
import resource, sys
from pathlib import Path
cap = 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from pytest_ctxeval.strategies.presets import PresetError, load_presets
from pytest_ctxeval.strategies.registry import builtin_strategies
try:
    load_presets([Path(sys.argv[1])], builtin_strategies())
except PresetError as exc:
    print("refused:", exc)
except MemoryError:
    print("MemoryError")
"""


def test_a_preset_alias_bomb_is_refused_under_the_scenario_limits(tmp_path):
    (tmp_path / "bomb.yaml").write_text(BOMB, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", LOAD_PRESETS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.startswith("refused:"), done.stdout + done.stderr
    assert "bomb.yaml:" in done.stdout
    assert "(set CTXEVAL_MAX_YAML_NODES to raise it)" in done.stdout


# -- baselines ------------------------------------------------------------------------------

ENTRY = {
    "scenario_file": "scenarios/recall.yaml",
    "scenario": "recall",
    "strategy": "full",
    "probe": "launch-code",
    "classification": "ok",
    "verdict": "pass",
}


@pytest.mark.parametrize(
    ("case", "baseline", "says"),
    [
        (
            "nan",
            json.dumps({"version": 1, "entries": [{**ENTRY, "cost_usd": 1.0}]}).replace(
                "1.0", "NaN"
            ),
            "entry 1 (scenarios/recall.yaml::recall::launch-code[full]): cost_usd: "
            "Input should be a finite number",
        ),
        (
            "missing-field",
            json.dumps(
                {"version": 1, "entries": [{k: v for k, v in ENTRY.items() if k != "verdict"}]}
            ),
            "entry 1 (scenarios/recall.yaml::recall::launch-code[full]): verdict: Field required",
        ),
        (
            "unknown-version",
            json.dumps({"version": 99, "entries": [{"anything": 1}]}),
            "baseline version 99 is not supported (expected 1)",
        ),
    ],
    ids=["nan", "missing-field", "unknown-version"],
)
def test_a_bad_baseline_is_one_usage_error_naming_the_file_and_entry(ctx, case, baseline, says):
    ctx.write("baseline.json", baseline)
    ctx.scenario("recall", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-baseline=baseline.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    lines = [line for line in output(result).splitlines() if "--ctx-baseline:" in line]
    assert len(lines) == 1, output(result)
    assert str(ctx.path / "baseline.json") in lines[0]
    assert says in lines[0], lines[0]
    assert_no_traceback(result)


# -- Retry-After ------------------------------------------------------------------------------


def test_a_retry_after_past_the_deadline_is_not_waited_for(server):
    late = error(429)
    server.script(
        Reply(late.status, late.body, headers={"retry-after": "100000"}), reply("too late")
    )
    model = ModelClient("openai/test-model", api_base=server.url, deadline_s=300.0)
    with pytest.raises(ModelError) as info:
        model.complete([{"role": "user", "content": "hi"}])
    assert re.search(r"asks to retry after 100,000 s, past the 300 s deadline", str(info.value))
    assert len(server.chat_requests) == 1
