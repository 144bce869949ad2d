"""Redaction never changes what is scored: a key-like fact the scenario
plants (``sk-...``, ``Bearer ...``, ``ghp_...``) is scored on the real text,
so losing it is caught.  What is stored and shown hides the environment's and
the client's keys, and what a scenario marks ``secret: true``; errors from a
server also lose whatever looks like a token (``ghp_`` included)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import output, read_jsonl
from fake_openai_server import FakeOpenAIServer, error

from pytest_ctxeval.redact import REDACTED, scrub
from pytest_ctxeval.report.page_data import unpacked_text

SK = "sk-proj-PlantedByTheScenario1234"
BEARER = "Bearer planted0scenario0token0000"
GHP = "ghp_" + "A1b2C3d4E5" * 4

PLANTED = f"""
id: keys
turns:
  - user: "Let's set up the deploy."
  - assistant: Sure.
needles:
  - {{id: openai, turn: 1, text: "The OpenAI key for staging is {SK}.",
     question: "What is the OpenAI key for staging?", answer: "{SK}"}}
  - {{id: header, turn: 2, text: "The proxy header is Authorization: {BEARER}.",
     question: "What is the proxy header?", answer: "{BEARER}"}}
  - {{id: github, turn: 1, text: "The CI token for GitHub is {GHP}.",
     question: "What is the CI token for GitHub?", answer: "{GHP}"}}
probes:
  - {{id: openai, needle: openai}}
  - {{id: header, needle: header}}
  - {{id: github, needle: github}}
"""


@pytest.mark.parametrize("mode", [(), ("-n", "2")], ids=["no-xdist", "n2"])
def test_key_like_needles_planted_by_the_scenario_are_scored_on_the_real_text(ctx, mode):
    ctx.scenario("keys", PLANTED)
    result = ctx.run("--ctx-strategy=full,sliding", *mode)
    records = ctx.results()
    assert len(records) == 6
    for record in records:
        if record["strategy"] == "full":
            assert record["classification"] == "ok", record
    assert result.ret == 0 or "context_loss" in output(result)
    assert all(r["classification"] != "model_miss" for r in records), [
        (r["strategy"], r["probe"], r["classification"]) for r in records
    ]


SECRET = """
id: vault
turns:
  - user: "The vault passphrase is hunter2-vault."
  - assistant: Noted.
needles:
  - {id: pass, turn: 1, text: "The vault passphrase is hunter2-vault.",
     question: "What is the vault passphrase?", answer: "hunter2-vault", secret: true}
probes:
  - {id: pass, needle: pass}
"""


def test_a_value_the_scenario_marks_secret_is_scored_but_never_shown(ctx):
    ctx.scenario("vault", SECRET)
    result = ctx.run("--ctx-strategy=full", "-rA")
    (record,) = ctx.results()
    assert record["verdict"] == "pass"
    assert record["classification"] == "ok"
    assert REDACTED in record["answer"]
    assert "hunter2-vault" not in (ctx.path / "reports" / "results.jsonl").read_text("utf-8")
    report = (ctx.path / "reports" / "ctxeval.html").read_text("utf-8")
    assert "hunter2-vault" not in unpacked_text(report)  # the drill-downs unpacked too
    assert "hunter2-vault" not in output(result)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def test_a_github_token_in_a_server_error_is_redacted(ctx, server):
    server.responder = lambda body: error(401, f"bad credentials for token {GHP}")
    ctx.scenario("vault", SECRET.replace(", secret: true", ""))
    result = ctx.run(
        "--ctx-strategy=full", "--ctx-model=openai/test-model", f"--ctx-api-base={server.url}"
    )
    (record,) = read_jsonl(ctx.path / "reports" / "results.jsonl")
    assert record["verdict"] == "error"
    assert GHP not in record["error"] and REDACTED in record["error"], record["error"]
    assert GHP not in output(result)


@pytest.mark.parametrize(
    "token",
    [
        GHP,
        "github_pat_" + "a1B2" * 10,
        "glpat-" + "x1Y2z3" * 4,
        "xoxb-1234567890-abcdef",
        "AKIA" + "ABCDEFGHIJ123456",
    ],
)
def test_common_token_shapes_are_redacted_in_errors(token):
    assert scrub(f"denied: {token} is revoked") == f"denied: {REDACTED} is revoked"
