"""Rollout mode: the model writes every assistant turn, each strategy's
rollout beside a ``full`` shadow on the same user turns, every turn checked
against the constraints in force; tool stubs; runaway bounds; record/replay;
the bundled 40-turn scenario repeating byte for byte."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import XDIST_MODES, CtxProject, assert_no_traceback, output
from fake_openai_server import FakeOpenAIServer, Reply, last_user_text, reply, tool_call_reply

from pytest_ctxeval.report.page_data import drilldown_items, read_page_data

pytestmark = pytest.mark.usefixtures("_preloaded_modules")

REPO = Path(__file__).resolve().parents[1]
BUNDLED = REPO / "scenarios" / "rollout-coding-40.yaml"

# A rule in the first message, then 11 more user turns with code tasks at
# turns 3, 9 and 12: sliding (last 6 turns) has lost the rule by turn 9.
LIVE = """
    id: live
    mode: rollout
    system: You are a coding assistant.
    turns:
      - user: We are writing an HTTP client today.
      - assistant: Understood.
    constraints:
      - id: no-requests
        at_turn: 1
        text: "Never use the requests library; always use urllib3."
        check: {python: {forbid_imports: [requests], require_imports: [urllib3]}}
    rollout:
      user:
        - The API lives at the billing host.
        - Write a function that downloads a URL.
        - The API answers in JSON.
        - Responses are small.
        - Keep the functions short.
        - The host name is billing.internal.
        - Thanks for that.
        - Write a function that fetches the invoice list over HTTP.
        - We ship on Thursday.
        - Nice work.
    probes:
      - {id: last, user: "Write a function that downloads the status page."}
"""


def _strip_run(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what differs between two runs of the same inputs."""
    return {k: v for k, v in record.items() if k not in {"run_id", "started_at", "latency_s"}}


def by_strategy(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["strategy"]: r for r in records}


MODES = {**XDIST_MODES, "no-xdist-plugin": ("-p", "no:xdist")}


@pytest.mark.parametrize("xdist", list(MODES))
def test_rollout_checks_every_turn_and_pairs_each_strategy_with_a_full_shadow(
    ctx: CtxProject, xdist: str
) -> None:
    ctx.scenario("live", LIVE)
    # --ctx-verbose: the failure's whole block, where the rule's lapse is told.
    result = ctx.run("--ctx-strategy=full,sliding", "--ctx-verbose", *MODES[xdist])
    assert_no_traceback(result)
    result.assert_outcomes(passed=1, failed=1)
    text = output(result)
    assert "live::rollout[sliding]" in text
    records = by_strategy(ctx.results())
    assert set(records) == {"full", "sliding"}
    sliding, full = records["sliding"], records["full"]
    assert sliding["probe"] == "rollout" and sliding["mode"] == "rollout"
    assert sliding["classification"] == "context_loss" and sliding["verdict"] == "fail"
    assert sliding["rollout_turns"] == 12
    # Code was written at turns 3, 9 and 12: only the first had the rule in view.
    assert sliding["checked_turns"] == 3
    assert sliding["violating_turns"] == 2
    assert sliding["violation_rate"] == pytest.approx(2 / 3)
    assert sliding["first_violation_turn"] == 9
    assert sliding["shadow_violation_rate"] == 0.0
    assert sliding["shadow_first_violation_turn"] is None
    assert full["violation_rate"] == 0.0 and full["classification"] == "ok"
    assert sliding["failed_checks"][0].startswith("turn 9: no-requests: ")
    timeline = {row["turn"]: row for row in sliding["rollout_timeline"]}
    assert timeline[9]["broken"] == ["no-requests"] and timeline[9]["shadow_broken"] == []
    assert timeline[3]["broken"] == [] and timeline[3]["checked"] == ["no-requests"]
    assert sliding["divergence_turn"] == 9
    diff = sliding["artifact_diff"]
    assert "-import urllib3" in diff and "+import requests" in diff
    assert full["artifact_diff"] is None
    # The failure report says where the rule lapsed; the summary gives the rates.
    assert "turn 9: no-requests" in text
    assert (
        "rollout:             12 turns, violation rate 67% (2/3 turns), first at turn 9; "
        "full shadow 0%; diverged at turn 9"
    ) in text
    assert "artifact:            differs from the shadow's" in text
    assert "rollouts: constraint violations over the checked turns (the full shadow beside)" in text
    assert "sliding  violation rate  67% (2/3 turns), first at turn 9 of live  shadow 0%" in text
    assert "full     violation rate   0% (0/3 turns)  shadow 0%" in text


def test_the_report_draws_each_rollout_turn_by_turn_with_its_artifact_diff_and_ledger(
    ctx: CtxProject,
) -> None:
    ctx.scenario("live", LIVE)
    ctx.run("--ctx-strategy=full,sliding").assert_outcomes(passed=1, failed=1)
    html = (ctx.path / "reports" / "ctxeval.html").read_text(encoding="utf-8")
    items = {i["strategy"]: i for i, _ in drilldown_items(read_page_data(html))}
    rollout = items["sliding"]["rollout"]
    assert rollout["first_violation_turn"] == 9 and rollout["divergence_turn"] == 9
    assert [row["turn"] for row in rollout["timeline"]] == list(range(1, 13))
    checked = [row["turn"] for row in rollout["timeline"] if row["checked"]]
    assert checked == [3, 9, 12]
    assert rollout["timeline"][8]["broken"] == ["no-requests"]
    assert "+import requests" in rollout["artifact_diff"]
    # The rule leaves sliding's window at its 7th request: the ledger says so.
    assert rollout["ledger"]["no-requests"]["events"] == ["lost at request 7"]
    assert rollout["ledger"]["no-requests"]["runs"] == [["verbatim", 6], ["gone", 6]]
    # The script draws these sections for a rollout item.
    for title in ("Rollout timeline", "Final artifact (full shadow → strategy)", "Fact ledger"):
        assert title in html
    assert "rollout" not in items["full"] or items["full"]["rollout"]["artifact_diff"] is None


def test_ctx_mode_on_the_command_line_wins_over_the_scenario(ctx: CtxProject) -> None:
    ctx.scenario("live", LIVE)
    ctx.scenario(
        "scripted",
        """
        id: scripted
        turns:
          - user: The port is 5432.
          - assistant: Noted.
        probes:
          - {id: port, user: "Which port?", expect: {contains: "5432"}}
        """,
    )
    assert ctx.collect_ids("--ctx-strategy=full") == [
        "scenarios/live.yaml::live::rollout[full]",
        "scenarios/scripted.yaml::scripted::port[full]",
    ]
    assert ctx.collect_ids("--ctx-strategy=full", "--ctx-mode=replay") == [
        "scenarios/live.yaml::live::last[full]",
        "scenarios/scripted.yaml::scripted::port[full]",
    ]
    assert ctx.collect_ids("--ctx-strategy=full", "--ctx-mode=rollout") == [
        "scenarios/live.yaml::live::rollout[full]",
        "scenarios/scripted.yaml::scripted::rollout[full]",
    ]
    result = ctx.run("--ctx-mode=live")
    assert "--ctx-mode: invalid value 'live'; expected one of: replay, rollout" in output(result)
    assert_no_traceback(result)


def test_a_tool_stub_without_an_answer_is_one_located_error(ctx: CtxProject) -> None:
    ctx.scenario(
        "bad",
        """
        id: bad
        mode: rollout
        turns:
          - user: Hello.
        rollout:
          tools:
            - {name: run_tests}
        probes:
          - {id: p, user: "Hi?"}
        """,
    )
    result = ctx.run("--ctx-strategy=full")
    text = output(result)
    assert (
        "scenarios/bad.yaml:7:7: rollout.tools[0]: tool stub 'run_tests' has no answer; "
        "expected 'output', 'key' with 'outputs', or 'writes: true'"
    ) in text
    assert_no_traceback(result)


def _bundled_project(ctx: CtxProject) -> None:
    ctx.write("scenarios/rollout-coding-40.yaml", BUNDLED.read_text(encoding="utf-8"))


def test_bundled_40_turn_rollout_sliding_violates_full_does_not_and_repeats_byte_for_byte(
    ctx: CtxProject,
) -> None:
    _bundled_project(ctx)
    first = ctx.run("--ctx-strategy=full,sliding", "--ctx-results=first.jsonl")
    second = ctx.run("--ctx-strategy=full,sliding", "--ctx-results=second.jsonl", "-n", "2")
    assert_no_traceback(first)
    first.assert_outcomes(passed=1, failed=1)
    second.assert_outcomes(passed=1, failed=1)
    one = sorted((_strip_run(r) for r in ctx.results("first.jsonl")), key=lambda r: r["strategy"])
    two = sorted((_strip_run(r) for r in ctx.results("second.jsonl")), key=lambda r: r["strategy"])
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    records = by_strategy(one)
    sliding, full = records["sliding"], records["full"]
    assert sliding["rollout_turns"] == 40
    assert sliding["violation_rate"] > 0
    assert full["violation_rate"] == 0.0
    assert sliding["first_violation_turn"] == 7
    assert sliding["shadow_violation_rate"] == 0.0
    assert "+import requests" in sliding["artifact_diff"]
    assert "full/fetch_customers.py" in sliding["artifact_diff"]
    assert "fetch_invoices.py" in sliding["artifact_files"]
    # The rule lapses with the first message: the ledger shows where.
    assert sliding["fact_ledger"]["no-requests"][-1][0] == "gone"


# --- real models (the fake server on loopback) --------------------------------


def _coder(body: dict[str, Any]) -> Reply:
    """A model that follows the rule while it can see it, calls write_file
    for a task naming a file (then says it is done), and otherwise answers briefly."""
    messages = body.get("messages", [])
    seen = " ".join(str(m.get("content") or "") for m in messages)
    last = messages[-1] if messages else {}
    question = last_user_text(body)
    library = "urllib3" if "urllib3" in seen else "requests"
    wrote = last.get("role") == "tool" and last.get("name") == "write_file"
    if question.startswith("Write") and ".py" in question and not wrote:
        path = question.split()[1]
        arguments = json.dumps({"path": path, "content": f"import {library}\n"})
        return tool_call_reply("write_file", arguments, call_id=f"call_{path}")
    if question.startswith("Write") and last.get("role") == "user":
        return reply(f"```python\nimport {library}\n```")
    return reply("Done.")


@pytest.fixture
def coder_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=_coder) as server:
        yield server


TOOLS = """
    id: tools
    mode: rollout
    turns:
      - user: "Never use the requests library; always use urllib3."
    constraints:
      - id: rule
        at_turn: 1
        text: "Never use the requests library; always use urllib3."
        check: {python: {forbid_imports: [requests]}}
    rollout:
      tools:
        - {name: write_file, writes: true}
        - {name: read_config, key: name, outputs: {db: "port 5432"}, default: "no such config"}
        - {name: run_tests, output: "3 passed"}
      user:
        - Write app.py that downloads the report.
    probes:
      - {id: last, user: "Write lib.py that fetches a URL."}
"""


def _real_args(url: str, *more: str) -> tuple[str, ...]:
    return ("--ctx-model=openai/test-model", f"--ctx-api-base={url}", "--ctx-cassettes=cass", *more)


def test_tool_stubs_answer_fixed_and_by_argument_and_writes_become_the_artifact(
    ctx: CtxProject,
) -> None:
    def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        function = {"name": name, "arguments": arguments}
        return {"id": call_id, "type": "function", "function": function}

    def responder(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and "app.py" in last["content"]:
            calls = [
                call("c1", "read_config", '{"name": "db"}'),
                call("c2", "read_config", '{"name": "x"}'),
                call("c3", "run_tests", "{}"),
            ]
            return reply(None, tool_calls=calls)
        return _coder(body)

    with FakeOpenAIServer(responder=responder) as server:
        ctx.scenario("tools", TOOLS)
        result = ctx.run("--ctx-strategy=full", *_real_args(server.url))
        assert_no_traceback(result)
        result.assert_outcomes(passed=1)
        answered = {
            m["tool_call_id"]: m["content"]
            for r in server.chat_requests
            for m in r.body["messages"]
            if m["role"] == "tool"
        }
        offered = {t["function"]["name"] for t in server.chat_requests[0].body["tools"]}
    assert answered["c1"] == "port 5432"
    assert answered["c2"] == "no such config"
    assert answered["c3"] == "3 passed"
    assert offered == {"write_file", "read_config", "run_tests"}
    (record,) = ctx.results()
    assert record["artifact_files"] == ["app.py", "lib.py"]
    assert record["violation_rate"] == 0.0


def test_a_runaway_tool_loop_ends_its_rollout_with_an_error_and_the_run_goes_on(
    ctx: CtxProject,
) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if "loop" in json.dumps(body["messages"][:2]):
            return tool_call_reply("run_tests", "{}")
        return reply("Done.")

    with FakeOpenAIServer(responder=responder) as server:
        ctx.scenario(
            "runaway",
            """
            id: runaway
            mode: rollout
            turns:
              - user: Please loop on the tests.
            rollout:
              max_tool_rounds: 2
              tools:
                - {name: run_tests, output: "1 failed"}
            probes:
              - {id: p, user: "Are we done?"}
            """,
        )
        ctx.scenario(
            "calm",
            """
            id: calm
            mode: rollout
            turns:
              - user: Hello there.
            probes:
              - {id: p, user: "Are we done?"}
            """,
        )
        result = ctx.run("--ctx-strategy=full", *_real_args(server.url))
    assert_no_traceback(result)
    result.assert_outcomes(passed=1, failed=1)
    records = {r["scenario"]: r for r in ctx.results()}
    assert records["calm"]["verdict"] == "pass"
    error = records["runaway"]["error"]
    assert error.startswith("the rollout under 'full' ended at turn 1: runaway tool loop")
    assert "rollout.max_tool_rounds" in error


def test_a_recorded_rollout_replays_with_zero_calls(
    ctx: CtxProject, coder_server: FakeOpenAIServer
) -> None:
    ctx.scenario("live", LIVE)
    first = ctx.run("--ctx-strategy=full,sliding", *_real_args(coder_server.url))
    first.assert_outcomes(passed=1, failed=1)
    assert coder_server.chat_requests
    recorded = [_strip_run(r) for r in ctx.results()]
    with FakeOpenAIServer() as counting:
        again = ctx.run(
            "--ctx-strategy=full,sliding",
            "--ctx-record=none",
            "--ctx-results=again.jsonl",
            *_real_args(counting.url),
        )
        assert counting.chat_requests == []
    again.assert_outcomes(passed=1, failed=1)
    replayed = [_strip_run(r) for r in ctx.results("again.jsonl")]
    assert json.dumps(replayed, sort_keys=True) == json.dumps(recorded, sort_keys=True)
    assert by_strategy(replayed)["sliding"]["first_violation_turn"] == 9


PLACED = """
    id: placed
    mode: rollout
    turns:
      - user: The staging database listens on port 5432.
    rollout:
      probe_turns: {port: 2}
      user:
        - Thanks.
        - Good.
    probes:
      - id: port
        user: Which port does the staging database listen on?
        expect: {contains: "5432"}
      - {id: last, user: "Anything else?"}
"""


def test_a_probe_can_be_asked_at_any_turn_of_the_rollout(ctx: CtxProject) -> None:
    ctx.scenario("placed", PLACED)
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=1)
    (record,) = ctx.results()
    timeline = {row["turn"]: row for row in record["rollout_timeline"]}
    assert record["rollout_turns"] == 5
    assert timeline[2]["checked"] == ["probe:port"] and timeline[2]["broken"] == []
    assert all(not timeline[t]["checked"] for t in (1, 3, 4, 5))


def test_probe_turns_naming_no_probe_is_one_located_error(ctx: CtxProject) -> None:
    ctx.scenario("placed", PLACED.replace("probe_turns: {port: 2}", "probe_turns: {prot: 2}"))
    result = ctx.run("--ctx-strategy=full")
    assert (
        "rollout.probe_turns.prot: probe_turns names probe 'prot'; known probes: last, port; "
        "did you mean 'port'?"
    ) in output(result)
    assert_no_traceback(result)


def test_tools_of_a_scripted_session_are_answered_with_its_recorded_outputs(
    ctx: CtxProject,
) -> None:
    ctx.scenario(
        "traced",
        """
        id: traced
        turns:
          - user: Show the failing test.
          - assistant: null
            tool_calls: [{name: run_tests, args: {path: tests/a.py}}]
          - tool: {name: run_tests, args: {path: tests/a.py}, output: "a: 1 failed"}
          - assistant: One test fails.
          - user: And the other file?
          - assistant: null
            tool_calls: [{name: run_tests, args: {path: tests/b.py}}]
          - tool: {name: run_tests, args: {path: tests/b.py}, output: "b: 3 passed"}
          - assistant: They pass.
        probes:
          - {id: p, user: "Done?"}
        """,
    )

    def responder(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "And the other file?":
            return tool_call_reply("run_tests", '{"path": "tests/b.py"}', call_id="b")
        if last["role"] == "user" and last["content"] == "Done?":
            return tool_call_reply("run_tests", '{"path": "tests/zzz.py"}', call_id="z")
        return reply("Ok.")

    with FakeOpenAIServer(responder=responder) as server:
        result = ctx.run("--ctx-strategy=full", "--ctx-mode=rollout", *_real_args(server.url))
        result.assert_outcomes(passed=1)
        answered = {
            m["tool_call_id"]: m["content"]
            for r in server.chat_requests
            for m in r.body["messages"]
            if m["role"] == "tool"
        }
        offered = {t["function"]["name"] for t in server.chat_requests[0].body["tools"]}
    assert offered == {"run_tests"}
    # The same arguments get their own output; others the next one recorded.
    assert answered == {"b": "b: 3 passed", "z": "a: 1 failed"}
