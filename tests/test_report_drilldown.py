"""Each item's drill-down: the window trace (what the strategy kept, cut,
pruned, wrote or dropped), the run's metadata, the pytest outcome, and the
record fields a real run fills for them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject, by_key

from pytest_ctxeval.evaluate.window_trace import (
    KEPT_RUN_EDGE,
    KEPT_TEXT_CHARS,
    TRACE_TEXT_CHARS,
    window_trace,
)
from pytest_ctxeval.llm.tokens import message_tokens, tools_tokens
from pytest_ctxeval.probe_session import ProbeSession
from pytest_ctxeval.report import run_info
from pytest_ctxeval.report.drilldown import script_json, word_diff
from pytest_ctxeval.report.outcomes import pytest_outcome
from pytest_ctxeval.report.run_info import (
    collect_run_info,
    git_commit,
    strategy_kind,
    strategy_params,
)
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.strategies.headtail import HeadTailStrategy
from pytest_ctxeval.strategies.registry import resolve

SYSTEM = {"role": "system", "content": "You are an ops assistant."}
QUESTION = {"role": "user", "content": "Which port did we pick?"}


def chat(*texts: str) -> list[dict[str, Any]]:
    """User and assistant messages in turn, after the system prompt."""
    roles = ("user", "assistant")
    return [SYSTEM] + [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]


def trace(session: list[dict[str, Any]], sent: list[dict[str, Any]], tools: Any = ()) -> list:
    found = window_trace(
        session, sent, tools, message_tokens=message_tokens, tools_tokens=tools_tokens
    )
    # The harness traces against a ProbeSession, whose history is indexed once
    # for all probes (its running token totals too): the same trace, indexed or not.
    history = session[:-1]
    for key in (None, "m", "m"):
        probed = ProbeSession(history, session[-1])
        assert (
            window_trace(
                probed,
                sent,
                tools,
                message_tokens=message_tokens,
                tools_tokens=tools_tokens,
                tokens_key=key,
            )
            == found
        )
    return found


def marks(parts: list[dict[str, Any]]) -> list[str]:
    return [p["mark"] for p in parts]


# -- window trace ----------------------------------------------------------------------


def test_dropped_messages_are_one_range_with_their_tokens():
    session = chat("one", "two", "three", "four", "five", "six", "Which port?")
    sent = [session[0], *session[5:]]  # a sliding window: system prompt and the last three
    parts = trace(session, sent)
    assert marks(parts) == ["kept", "dropped", "kept", "kept", "kept"]
    assert parts[0]["n"] == 0 and parts[0]["text"] == SYSTEM["content"]
    dropped = parts[1]
    assert (dropped["from"], dropped["to"], dropped["count"]) == (1, 4, 4)
    assert dropped["tokens"] == sum(message_tokens(m) for m in session[1:5])
    assert [p["n"] for p in parts[2:]] == [5, 6, 7]


def test_a_window_that_drops_the_question_too_counts_its_tokens_in_the_last_run():
    # A strategy that breaks the rules: its trace still shows what it left out.
    session = chat("one", "two", "three", "four", "What was said first?")
    parts = trace(session, session[:2])
    assert marks(parts) == ["kept", "kept", "dropped"]
    dropped = parts[2]
    assert (dropped["from"], dropped["to"], dropped["count"]) == (2, 5, 4)
    assert dropped["tokens"] == sum(message_tokens(m) for m in session[2:])


def test_repeated_texts_are_matched_in_order():
    session = chat("Ok.", "Of course.", "Ok.", "Of course.", "Which one?")
    parts = trace(session, [session[0], session[3], session[4], session[5]])
    assert [p.get("n") for p in parts] == [0, None, 3, 4, 5]  # not the first "Ok."
    assert parts[1] == {
        "mark": "dropped",
        "from": 1,
        "to": 2,
        "count": 2,
        "tokens": message_tokens(session[1]) + message_tokens(session[2]),
    }


def headtail_cut_trace(listing: str) -> tuple[list[dict[str, Any]], Any]:
    """The trace of a headtail window that cut the middle of a bulky reply."""
    rows = "\n".join(f'{{"seq": {i}, "status": "ok"}}' for i in range(60))
    session = [
        SYSTEM,
        {"role": "user", "content": "Dump the deployments."},
        {"role": "assistant", "content": rows},
        {"role": "user", "content": "What was deployment 31?"},
    ]
    strategy = HeadTailStrategy(head=40, tail=40, listing=listing)
    for message in session:
        strategy.add(message)
    window = strategy.window()
    parts = trace(session, window.messages, window.tools)
    cut = [p for p in parts if p["mark"] == "shortened"][0]
    assert cut["n"] == 2 and cut["memory"] == ["m1"]
    assert cut["tokens"] < cut["original_tokens"] == message_tokens(session[2])
    assert "stored as memory m1" in cut["text"]
    assert parts[0]["text"].startswith("retrieve_memory: ")
    assert parts[0]["tokens"] == tools_tokens(window.tools)
    return parts, window


def test_headtail_cut_is_shortened_with_its_memory_and_the_tool_listing():
    parts, _ = headtail_cut_trace("tool")
    assert marks(parts) == ["tools", "kept", "kept", "shortened", "kept"]
    assert "id=m1 | position 3" in parts[0]["text"]


def test_headtail_memory_index_message_is_text_it_wrote_naming_the_memories():
    parts, window = headtail_cut_trace("message")
    assert marks(parts) == ["tools", "kept", "kept", "shortened", "summary", "kept"]
    assert "id=m1" not in parts[0]["text"]  # the tool lists nothing
    index = parts[4]
    assert index["role"] == "user" and index["memory"] == ["m1"]
    assert index["text"].startswith("Memory index (call retrieve_memory")
    assert "from" not in index and "n" not in index
    assert index["tokens"] == message_tokens(window.messages[-2])


def test_a_memory_index_never_stands_for_a_message_it_previews():
    # The earlier chat's transcript is one memory; its preview ends like the
    # earlier chat's last message, which is dropped, not "built on".
    earlier = {"role": "user", "content": "Remember that the staging port is 5433 for good."}
    session = [SYSTEM, earlier, QUESTION]
    strategy = HeadTailStrategy()
    strategy.add(SYSTEM)
    strategy.add(earlier)
    strategy.end_session()
    strategy.add(QUESTION)
    window = strategy.window()
    assert window.messages[-2]["content"].endswith(earlier["content"])  # the premise
    parts = trace(session, window.messages, window.tools)
    assert marks(parts) == ["tools", "kept", "summary", "dropped", "kept"]
    assert parts[2]["memory"] == ["m1"] and "from" not in parts[2]
    assert (parts[3]["from"], parts[3]["to"]) == (1, 1)


def test_a_replaced_tool_output_is_pruned_and_a_cut_message_shortened():
    call = {"id": "call_1", "type": "function", "function": {"name": "logs", "arguments": "{}"}}
    output = "line\n" * 200
    session = [
        SYSTEM,
        {"role": "user", "content": "Fetch the logs, then tell me what failed in the build " * 4},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "logs", "content": output},
        {"role": "user", "content": "What failed?"},
    ]
    sent = [
        SYSTEM,
        {"role": "user", "content": session[1]["content"][:40]},
        session[2],
        {**session[3], "content": "[… 200 lines pruned …]"},
        session[4],
    ]
    parts = trace(session, sent)
    assert marks(parts) == ["kept", "shortened", "kept", "pruned", "kept"]
    assert parts[2]["calls"] == ["logs({})"]
    assert parts[3]["n"] == 3 and parts[3]["original_tokens"] == message_tokens(session[3])


def test_text_the_strategy_wrote_is_a_summary():
    session = chat("My locker is 4417.", "Noted.", "Nice weather.", "Yes.", "My locker?")
    rebuilt = {"role": "system", "content": SYSTEM["content"] + "\n\n## Working memory: locker"}
    summary = {"role": "user", "content": "Here is a summary: the locker is 4417."}
    parts = trace(session, [rebuilt, summary, session[4], session[5]])
    assert marks(parts) == ["summary", "summary", "dropped", "kept", "kept"]
    assert parts[0]["from"] == 0 and "n" not in parts[0]  # built on the system prompt
    assert "from" not in parts[1] and parts[1]["text"] == summary["content"]
    assert (parts[2]["from"], parts[2]["to"]) == (1, 3)


def test_texts_are_capped_and_long_kept_runs_folded():
    session = chat(*[f"message {i} " + "x" * 500 for i in range(1, 21)], "And now?")
    parts = trace(session, session)
    shown = [p for p in parts if "text" in p]
    assert all(len(p["text"]) < KEPT_TEXT_CHARS + 64 for p in shown)
    assert shown[1]["text"].endswith("chars]")  # capped with the marker naming the length
    # 22 kept messages: the first and last few with text, the question, and one fold.
    folded = [p for p in parts if "count" in p]
    assert len(folded) == 1
    assert folded[0] == {
        "mark": "kept",
        "from": KEPT_RUN_EDGE,
        "to": 20 - KEPT_RUN_EDGE,
        "count": 21 - 2 * KEPT_RUN_EDGE,
        "tokens": sum(message_tokens(m) for m in session[KEPT_RUN_EDGE : 21 - KEPT_RUN_EDGE]),
    }
    assert len(parts) == 2 * KEPT_RUN_EDGE + 2
    assert parts[-1]["text"] == "And now?"


def test_the_whole_trace_stays_bounded():
    big = "y" * 3_000
    session = [SYSTEM, *({"role": "user", "content": f"{i} {big}"} for i in range(60)), QUESTION]
    sent = [SYSTEM, *({**m, "content": m["content"][:2_500]} for m in session[1:-1]), QUESTION]
    parts = trace(session, sent)
    assert marks(parts) == ["kept", *["shortened"] * 60, "kept"]
    # Uncapped this would be 60 x 2,000 characters; the parts past the total
    # keep a short start, with the marker naming their length.
    assert sum(len(p["text"]) for p in parts) < TRACE_TEXT_CHARS + 2_100 + 60 * 200
    assert parts[-2]["text"].endswith("… [truncated: 2,500 chars]")
    assert len(parts[-2]["text"]) < 200


# -- word diff ----------------------------------------------------------------------


def test_word_diff_marks_words_removed_and_added():
    assert word_diff("Use port 5432.", "Use port 8080.") == [
        ["=", "Use port"],
        ["-", " 5432"],
        ["+", " 8080"],
        ["=", "."],
    ]
    # Unrelated answers are one change, not a word salad of shared spaces.
    assert word_diff('{"TOKEN": "tok-4471"}', "I could not find that.") == [
        ["-", '{"TOKEN": "tok-4471"}'],
        ["+", "I could not find that."],
    ]
    assert word_diff("same", "same") is None
    assert word_diff(None, "answer") is None


# -- outcomes as pytest shows them ----------------------------------------------------


def record(**kw: Any) -> ResultRecord:
    base: dict[str, Any] = {
        "scenario": "s",
        "strategy": "full",
        "model": "ctxeval/oracle",
        "probe": "p",
        "verdict": "fail",
        "classification": "context_loss",
    }
    return ResultRecord(**{**base, **kw})


@pytest.mark.parametrize(
    ("fields", "fail_on", "outcome"),
    [
        ({"verdict": "pass", "classification": "ok"}, "context_loss", "passed"),
        ({}, "context_loss", "failed"),
        ({"classification": "model_miss"}, "context_loss", "xfailed"),
        ({"classification": "unstable"}, "context_loss", "xfailed"),
        ({"classification": "model_miss"}, "fail", "failed"),
        ({"classification": "divergent"}, "context_loss", "failed"),
        ({"classification": "beyond_context", "verdict": "error"}, "context_loss", "skipped"),
        ({"classification": "error", "verdict": "error"}, "never", "passed"),
    ],
)
def test_pytest_outcome_follows_fail_on(fields: dict[str, Any], fail_on: str, outcome: str):
    assert pytest_outcome(record(**fields), fail_on) == outcome


def test_pytest_outcome_under_the_baseline_gate():
    loss = record(scenario_file="s.yaml")
    key = ("s.yaml", "s", "full", "p")
    assert pytest_outcome(loss, regressed={key}) == "failed"
    assert pytest_outcome(loss, regressed=set()) == "xfailed"  # a known loss
    assert pytest_outcome(record(verdict="error", classification="error"), regressed=set()) == (
        "failed"
    )


# -- run metadata ----------------------------------------------------------------------


def test_git_commit_of_a_checkout_and_none_elsewhere(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    env = {
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null",
        "HOME": str(tmp_path),
    }
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True, env=env
    )
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, env=env
    ).stdout.strip()
    assert git_commit(repo / "sub") == head  # the rootdir may be below the checkout's top
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_commit(outside) is None


def test_git_commit_is_none_when_git_is_missing_or_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    def slow(*args: Any, **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    monkeypatch.setattr(run_info.subprocess, "run", slow)
    assert git_commit(tmp_path) is None
    monkeypatch.setattr(run_info.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError))
    assert git_commit(tmp_path) is None


def test_run_info_names_each_strategys_kind_and_parameters(tmp_path: Path):
    specs = resolve("sliding-8,headtail(head=50),full")
    info = collect_run_info(tmp_path, model="ctxeval/oracle", run_id="r1", strategies=specs)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", info.started_at)
    assert info.git_commit is None and info.plugin_version
    assert info.strategies == {
        "sliding-8": {"kind": "sliding", "params": {"turns": 8}},
        "headtail[head:50]": {"kind": "headtail", "params": {"head": 50}},
        "full": {"kind": "full", "params": {}},
    }
    stamped = record(strategy="sliding-8")
    info.stamp(stamped)
    assert (stamped.plugin_version, stamped.git_commit, stamped.started_at) == (
        info.plugin_version,
        None,
        info.started_at,
    )
    assert stamped.strategy_params == {"turns": 8}


def test_strategy_params_include_the_defaults_and_stay_json():
    (spec,) = resolve("headtail(head=50)")
    assert strategy_kind(spec) == "headtail"
    params = strategy_params(spec, spec.create())
    assert params == {"head": 50, "tail": 100, "max_listed": 40}

    class Odd:
        def params(self) -> dict[str, Any]:
            return {"when": object, "n": 1}

    odd = strategy_params(spec, Odd())
    assert odd["n"] == 1 and odd["when"] == repr(object)
    json.dumps(odd)


# -- a real run fills the new record fields -------------------------------------------

TRACED = """
id: ops
tags: [long-session, needle]
system: You are an assistant with access to the deployment database.
turns:
  - user: Dump the deployment records for the checkout service.
  - tool:
      name: query_deployments
      args: {service: checkout}
      generate: {kind: json_rows, rows: 120, seed: 3}
  - assistant: That is 120 records; most deployments succeeded.
  - generate: {kind: chitchat, turns: 4, seed: 7}
needles:
  - id: deploy-token
    turn: 3
    text: '{"DEPLOY_TOKEN": "tok-4471-alpha", "note": "rotated manually by oncall"}'
    question: What is the DEPLOY_TOKEN?
    answer: tok-4471-alpha
  - id: locker
    depth: 0.9
    role: user
    text: My gym locker number is 4417.
    question: What is my gym locker number?
    answer: "4417"
probes:
  - {id: deploy-token, needle: deploy-token}
  - {id: locker, needle: locker}
  - {id: zebra, user: "What is the zebra called?", expect: {contains: Zorro}}
"""


def test_records_carry_the_window_trace_tags_depth_and_series(ctx: CtxProject):
    ctx.scenario("ops", TRACED)
    result = ctx.run("--ctx-strategy=full,headtail(head=60),truncate")
    # truncate cuts the token out of the dump; nobody knows the zebra.
    result.assert_outcomes(passed=5, failed=1, xfailed=3)
    records = by_key(ctx.results())
    full = records[("ops", "full", "deploy-token")]
    assert full["tags"] == ["long-session", "needle"]
    assert full["strategy_params"] == {}
    assert (
        full["needle_depth"] is None and records[("ops", "full", "locker")]["needle_depth"] == 0.9
    )
    assert len(full["session_prompt_tokens"]) == 6  # one per assistant message of the session
    assert full["session_prompt_tokens"] == sorted(full["session_prompt_tokens"])
    assert {p["mark"] for p in full["window_trace"]} == {"kept"}

    headtail = records[("ops", "headtail[head:60]", "deploy-token")]
    assert headtail["strategy_params"] == {"head": 60, "tail": 100, "max_listed": 40}
    assert [p["mark"] for p in headtail["window_trace"]][:5] == [
        "tools",
        "kept",
        "kept",
        "kept",
        "shortened",
    ]
    (retrieval,) = headtail["retrievals"]
    assert retrieval["tool"] == "retrieve_memory" and retrieval["args"] == {"id": "m1"}
    # What the memory returned: its length, and its start (capped, with the marker).
    assert retrieval["chars"] > 10_000
    assert retrieval["text"].endswith(f"… [truncated: {retrieval['chars']:,} chars]")
    assert headtail["memory_retrievals"] == 1

    truncate = records[("ops", "truncate", "deploy-token")]
    assert truncate["classification"] == "context_loss"
    assert "dropped" in [p["mark"] for p in truncate["window_trace"]]

    html = (ctx.path / "reports/ctxeval.html").read_text(encoding="utf-8")
    counts = re.findall(r'<span class="outcome (\w+)">(\d+) \1</span>', html)
    assert counts[:3] == [("failed", "1"), ("passed", "5"), ("xfailed", "3")]


def test_the_pages_data_has_no_nan_and_no_way_out_of_its_script_element() -> None:
    clean = {"rate": 0.5, "rows": [1, 2.5, None], "answer": "café </script><!-- & more"}
    text = str(script_json(clean))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == clean
    # JSON has no word for NaN or infinity: they become null, wherever they are.
    odd = {"rates": [0.25, float("nan")], "deep": {"cost": float("inf"), "rows": (float("-inf"),)}}
    assert json.loads(str(script_json(odd))) == {
        "rates": [0.25, None],
        "deep": {"cost": None, "rows": [None]},
    }


def test_a_changed_message_is_traced_to_its_original():
    # A pruned tool result by its call id; a shortened message to the first
    # message of its role that starts the same way (two do: the earlier one);
    # a text sharing too little with any message is the strategy's own.
    session = [
        {"role": "user", "content": "The deploy of the billing service failed at noon today."},
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "Something else entirely about lunch and the weather."},
        {
            "role": "user",
            "content": "The deploy of the billing service failed at noon today, again",
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 60},
        {"role": "tool", "tool_call_id": "c2", "content": "y" * 60},
        {"role": "user", "content": "q?"},
    ]
    sent = [
        {"role": "tool", "tool_call_id": "c2", "content": "[pruned]"},
        {"role": "user", "content": "The deploy of the billing service failed [cut]"},
        {"role": "user", "content": "...noon today, again."},
        {"role": "user", "content": "q?"},
    ]
    parts = trace(session, sent)
    assert [(p["mark"], p.get("n"), p.get("from"), p.get("to")) for p in parts] == [
        ("dropped", None, 2, 5),
        ("pruned", 6, None, None),
        ("shortened", 1, None, None),
        ("summary", None, None, None),
        ("kept", 7, None, None),
    ]


def test_a_short_message_is_the_original_of_a_text_that_starts_or_ends_with_it():
    # Shorter than the 24 characters a longer original must share: a short
    # message is an original only when all of it starts or ends the text.
    # Empty messages (a tool call's assistant turn) are nobody's original.
    session = [
        {"role": "user", "content": "Use port 8080."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
        {"role": "user", "content": "ok"},
        {"role": "user", "content": "port"},
        {"role": "user", "content": "q?"},
    ]
    sent = [
        {"role": "user", "content": "Use port 8080. (said at turn 1)"},
        {"role": "user", "content": "Earlier you said: ok"},
        {"role": "assistant", "content": "A call was made here."},
        {"role": "user", "content": "q?"},
    ]
    parts = trace(session, sent)
    assert [(p["mark"], p.get("from")) for p in parts] == [
        ("summary", 1),
        ("summary", 3),
        ("summary", None),
        ("dropped", 2),
        ("dropped", 4),
        ("kept", None),
    ]
