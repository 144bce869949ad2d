"""The documented GitHub Actions workflow, run locally step by step, and the
`ctxeval merge` / `ctxeval gate` commands it relies on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CtxProject
from test_gate import RECALL

WORKFLOW = Path(__file__).parents[1] / "docs" / "github-actions" / "ctxeval.yml"
BIN = Path(sys.executable).parent


def run_steps(project: Path, job: dict, matrix: dict[str, object], env: dict[str, str]) -> int:
    """Run a job's `run:` steps in order (installing is skipped: this
    environment has the plugin) and return the exit code of the last one."""
    code = 0
    for step in job["steps"]:
        script = step.get("run")
        if script is None or script.strip().startswith("pip install"):
            continue
        script = re.sub(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", lambda m: str(matrix[m.group(1)]), script)
        assert "${{" not in script, f"unsubstituted expression in {script!r}"
        code = subprocess.run(["bash", "-ec", script], cwd=project, env=env).returncode
        if code:
            return code
    return code


@pytest.fixture
def project(ctx: CtxProject) -> Path:
    for i in range(4):
        ctx.scenario(f"s{i}", RECALL.replace("id: recall", f"id: recall-{i}"))
    return ctx.path


def workflow_env(project: Path) -> dict[str, str]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    env = {**os.environ, **workflow["env"], "GITHUB_STEP_SUMMARY": str(project / "summary.md")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def run_workflow(project: Path) -> int:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    env = workflow_env(project)
    jobs = workflow["jobs"]
    for shard in jobs["shard"]["strategy"]["matrix"]["shard"]:
        assert run_steps(project, jobs["shard"], {"shard": shard}, env) == 0
    return run_steps(project, jobs["gate"], {}, env)


def test_the_documented_workflow_runs_gates_and_reports(project: Path) -> None:
    env = workflow_env(project)
    # Step 1 of docs/ci.md: the baseline, from a run the team accepts.
    subprocess.run(
        ["pytest", "-p", "no:cacheprovider", "--ctx-update-baseline", "-q"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
    )
    assert run_workflow(project) == 0
    assert (project / "reports" / "ctxeval.html").stat().st_size > 10_000
    merged = [json.loads(line) for line in (project / "reports/results.jsonl").open()]
    shards = [sum(1 for _ in (project / f"reports/shard-{k}.jsonl").open()) for k in (1, 2)]
    assert len(merged) == sum(shards) and all(shards)
    keys = {(r["scenario"], r["strategy"], r["probe"]) for r in merged}
    assert len(keys) == len(merged)
    assert {r["scenario"] for r in merged} == {f"recall-{i}" for i in range(4)}
    assert "## ctxeval:" in (project / "summary.md").read_text()
    report = (project / "reports" / "ctxeval.html").read_text()
    assert 'id="gate-decision">gate passed: 0 regressions' in report

    # A probe the baseline remembers as ok now loses its fact: the gate step fails.
    baseline = project / "ctxeval-baseline.json"
    data = json.loads(baseline.read_text())
    lost = next(
        e
        for e in data["entries"]
        if e["classification"] == "context_loss" and e["scenario"] == "recall-2"
    )
    lost.update(classification="ok", verdict="pass")
    baseline.write_text(json.dumps(data, indent=1))
    assert run_workflow(project) == 1
    summary = (project / "summary.md").read_text()
    assert "### Regressions" in summary and "recall-2" in summary
    # The artifact agrees with the gate: one failure, the regressed probe marked.
    report = (project / "reports" / "ctxeval.html").read_text()
    assert 'id="gate-decision">gate failed (exit 1): 1 regression' in report
    assert '<span class="outcome failed">1 failed</span>' in report
    assert 'class="gate regressed"' in report


def ctxeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "ctxeval"), *args], cwd=cwd, capture_output=True, text=True)


def test_merge_refuses_a_probe_in_two_shards(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    ctx.run("--ctx-strategy=sliding", "--ctx-fail-on=never")
    results = ctx.path / "reports/results.jsonl"
    done = ctxeval("merge", "-o", "all.jsonl", str(results), str(results), cwd=ctx.path)
    assert done.returncode == 1
    assert "recall::sliding::launch-code is in both" in done.stderr
    assert "Traceback" not in done.stderr


def test_gate_command_exit_codes(ctx: CtxProject) -> None:
    ctx.scenario("recall", RECALL)
    ctx.run("--ctx-strategy=sliding", "--ctx-update-baseline")
    results = str(ctx.path / "reports/results.jsonl")
    ok = ctxeval("gate", results, "--baseline", "ctxeval-baseline.json", cwd=ctx.path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "gate: 0 regressions against the baseline" in ok.stdout
    bad_rule = ctxeval(
        "gate", results, "--baseline", "ctxeval-baseline.json", "--fail-if", "tokens", cwd=ctx.path
    )
    assert bad_rule.returncode == 4
    assert "invalid rule 'tokens'" in bad_rule.stderr
    missing = ctxeval("gate", results, "--baseline", "nope.json", cwd=ctx.path)
    assert missing.returncode == 4 and "no such baseline" in missing.stderr


def test_the_workflow_replays_a_real_models_cassettes_with_no_call(ctx: CtxProject) -> None:
    from fake_openai_server import FakeOpenAIServer

    ctx.scenario("recall", RECALL)
    model = "--ctx-model=openai/test-model"
    with FakeOpenAIServer() as server:
        # Recorded once, locally, with the server up (the echo server answers).
        recorded = ctx.run(
            model,
            f"--ctx-api-base={server.url}",
            "--ctx-cassettes=cassettes",
            "--ctx-strategy=full,sliding",
            "--ctx-update-baseline",
        )
        assert recorded.ret == 0, recorded.stdout.str()
        calls = len(server.chat_requests)
        assert calls > 0 and any((ctx.path / "cassettes").rglob("*.json"))
        # CI: the workflow's steps, with that model set in PYTEST_ADDOPTS.
        env = workflow_env(ctx.path)
        env["PYTEST_ADDOPTS"] = (
            env["PYTEST_ADDOPTS"].replace(
                "--ctx-model=ctxeval/oracle", f"{model} --ctx-api-base={server.url}"
            )
            + " --ctx-strategy=full,sliding"
        )
        workflow = yaml.safe_load(WORKFLOW.read_text())
        for shard in workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]:
            assert run_steps(ctx.path, workflow["jobs"]["shard"], {"shard": shard}, env) == 0
        assert run_steps(ctx.path, workflow["jobs"]["gate"], {}, env) == 0
        assert len(server.chat_requests) == calls  # every answer came from a cassette
    merged = [json.loads(line) for line in (ctx.path / "reports/results.jsonl").open()]
    assert len(merged) == 6 and all(r["model"] == "openai/test-model" for r in merged)
    assert not any(r["classification"] == "error" for r in merged)
