"""``ctxeval import otel|openinference``: production traces -> scenarios with
the windows production sent, on files the real instrumentations exported
(tests/fixtures/traces, made by make_traces.py there)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.cli import main
from pytest_ctxeval.traces import TraceOptions, import_traces
from pytest_ctxeval.traces.openinference import flattened_messages
from pytest_ctxeval.traces.otlp import read_spans, span_id

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
# (format, traces file, logs file, the fake server's requests file)
EXPORTS = {
    "openinference": ("openinference", "openinference.jsonl", None, "openinference-requests"),
    "otel-spans": ("otel", "otel-spans.jsonl", None, "otel-spans-requests"),
    "otel-spans-b64": ("otel", "otel-spans-b64.jsonl", None, "otel-spans-requests"),
    "otel-events": ("otel", "otel-events.jsonl", "otel-events-logs.jsonl", "otel-events-requests"),
}


def _import_args(name: str, out: Path, *extra: str) -> list[str]:
    fmt, traces, logs, _ = EXPORTS[name]
    args = ["import", fmt, str(FIXTURES / traces), "-o", str(out), *extra]
    return args + (["--logs", str(FIXTURES / logs)] if logs else [])


def _raw_spans(name: str) -> list[dict[str, Any]]:
    """The exporter's spans, read here without the importer."""
    spans = []
    for line in (FIXTURES / EXPORTS[name][1]).read_text(encoding="utf-8").splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                    spans.append({**span, "attrs": attrs})
    return spans


def _raw_logs(name: str) -> list[dict[str, Any]]:
    logs = EXPORTS[name][2]
    records = []
    for line in (FIXTURES / logs).read_text(encoding="utf-8").splitlines() if logs else []:
        for resource in json.loads(line)["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                records.extend(scope["logRecords"])
    return records


def _exporter_counts(name: str) -> dict[str, int]:
    """Chat spans, tool calls and user turns as the exporter's own records say."""
    spans = _raw_spans(name)
    if name == "openinference":
        chats = [s for s in spans if s["attrs"].get("openinference.span.kind") == "LLM"]
        calls = sum(
            1 for s in chats for k in s["attrs"] if k.endswith(".tool_call.id") and "output" in k
        )
        users = {
            s["attrs"][k.replace(".role", ".content")]
            for s in chats
            for k, v in s["attrs"].items()
            if k.startswith("llm.input_messages.") and k.endswith(".role") and v == "user"
        }
    else:
        chats = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "chat"]
        if name == "otel-events":
            logs = _raw_logs(name)
            calls = sum(
                json.dumps(r["body"]).count('{"key": "function"')
                for r in logs
                if r["eventName"] == "gen_ai.choice"
            )
            users = {json.dumps(r["body"]) for r in logs if r["eventName"] == "gen_ai.user.message"}
        else:
            calls = sum(
                1 for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"
            )
            users = {
                json.dumps(m)
                for s in chats
                for m in json.loads(s["attrs"]["gen_ai.input.messages"])
                if m["role"] == "user" and all(p["type"] == "text" for p in m["parts"])
            }
    return {"chat spans": len(chats), "tool calls": calls, "turns": len(users)}


@pytest.mark.parametrize("name", list(EXPORTS))
def test_turns_tool_calls_and_windows_are_counted_as_the_exporter_wrote_them(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_import_args(name, tmp_path)) == 0
    printed = capsys.readouterr().out
    expected = _exporter_counts(name)
    assert f"{expected['chat spans']} chat span(s)" in printed
    assert f"{expected['turns']} turn(s), {expected['tool calls']} tool call(s)" in printed
    windows = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*.windows.json"))]
    # Every chat span up to each session's last user turn is a window; the
    # agent's second look-up, after the last user turn, is not in the scenario.
    assert sum(len(w["windows"]) for w in windows) == expected["chat spans"] - 1
    assert f"{expected['chat spans'] - 1} window(s)" in printed
    assert len(list(tmp_path.glob("*.yaml"))) == 2 and "2 session(s)" in printed
    # The model and the token usage the spans report go into the description.
    assert all("model test-model" in p.read_text() for p in tmp_path.glob("*.yaml"))
    assert all("input tokens" in p.read_text() for p in tmp_path.glob("*.yaml"))


def _recorded_windows(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Per span ref, the window ``recorded`` builds at that span's point of
    the loaded scenario: through the loader and the strategy, as a run does."""
    from pytest_ctxeval.evaluate.inspect import window_at
    from pytest_ctxeval.scenario.loader import load_conversations
    from pytest_ctxeval.strategies.registry import resolve

    (spec,) = resolve("recorded")
    built: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out.glob("*.yaml")):
        (conversation,) = load_conversations(path)
        assert conversation.recorded_windows is not None
        session = len([m for m in conversation.messages if m["role"] != "system"])
        for at, recorded in conversation.recorded_windows.items():
            if at == session + 1:
                window = window_at(conversation, spec, probe="last-user")
            else:
                window = window_at(conversation, spec, turn=at + 1)
            built[recorded.span.split("/")[1]] = [*window.messages, {"tools": window.tools}]
    return built


def _requests(name: str) -> list[dict[str, Any]]:
    text = (FIXTURES / f"{EXPORTS[name][3]}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_openinference_windows_replay_byte_for_byte_as_sent(tmp_path: Path) -> None:
    assert main(_import_args("openinference", tmp_path)) == 0
    replayed = _recorded_windows(tmp_path)
    sent = {json.dumps(r["messages"], sort_keys=True): r for r in _requests("openinference")}
    chats = [s for s in _raw_spans("openinference") if s["attrs"].get("openinference.span.kind")]
    assert (
        len(replayed)
        == len([s for s in chats if s["attrs"]["openinference.span.kind"] == "LLM"]) - 1
    )
    for span in chats:
        ref = span_id(span["spanId"])
        if ref not in replayed:
            continue
        request = json.loads(span["attrs"]["input.value"])
        *messages, tools = replayed[ref]
        # The span's raw request, and what the fake server really received.
        assert messages == request["messages"] and tools["tools"] == request["tools"]
        received = sent[json.dumps(messages, sort_keys=True)]
        assert tools["tools"] == received["tools"]
        canonical = json.dumps(messages, ensure_ascii=False, sort_keys=True)
        assert canonical == json.dumps(received["messages"], ensure_ascii=False, sort_keys=True)


def test_otel_event_windows_replay_the_messages_as_sent(tmp_path: Path) -> None:
    """The older GenAI form: messages only in log events, joined by span id."""
    assert main(_import_args("otel-events", tmp_path)) == 0
    replayed = _recorded_windows(tmp_path)
    sent = [r["messages"] for r in _requests("otel-events")]
    assert len(replayed) == len(sent) - 1
    for window in replayed.values():
        *messages, tools = window
        assert messages in sent
        assert tools == {"tools": []}  # these spans carry no tool definitions


def test_otel_span_windows_replay_the_exported_attributes(tmp_path: Path) -> None:
    """The newer form: content in span attributes (pydantic-ai's instrumentation)."""
    assert main(_import_args("otel-spans", tmp_path)) == 0
    replayed = _recorded_windows(tmp_path)
    by_span = {span_id(s["spanId"]): s for s in _raw_spans("otel-spans")}
    for ref, window in replayed.items():
        *messages, tools = window
        attrs = by_span[ref]["attrs"]
        system = json.loads(attrs["gen_ai.system_instructions"])[0]["content"]
        exported = json.loads(attrs["gen_ai.input.messages"])
        assert messages[0] == {"role": "system", "content": system}
        texts = [p.get("content") or p.get("result") for m in exported for p in m["parts"]]
        assert [m.get("content") for m in messages[1:]] == [
            t if t is not None else None for t in texts
        ]
        names = [t["name"] for t in json.loads(attrs["gen_ai.tool.definitions"])]
        assert [t["function"]["name"] for t in tools["tools"]] == names
    # Production's own requests hold the same texts in the same order.
    sent = [[m.get("content") for m in r["messages"]] for r in _requests("otel-spans")]
    assert all([m.get("content") for m in w[:-1]] in sent for w in replayed.values())


def test_base64_ids_and_enum_names_read_as_hex_and_integers() -> None:
    hex_spans = read_spans((FIXTURES / "otel-spans.jsonl").read_text(), "hex")
    b64_spans = read_spans((FIXTURES / "otel-spans-b64.jsonl").read_text(), "b64")
    assert [(s.trace_id, s.span_id, s.parent_id, s.kind, s.start_ns) for s in hex_spans] == [
        (s.trace_id, s.span_id, s.parent_id, s.kind, s.start_ns) for s in b64_spans
    ]
    raw = (FIXTURES / "otel-spans-b64.jsonl").read_text()
    assert '"SPAN_KIND_CLIENT"' in raw and hex_spans[0].kind == 3


def _run(ctx: Any, out: Path, *args: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    from conftest import by_key

    result = ctx.run(str(out), "--ctx-strategy=recorded,full", *args)
    assert result.ret in (0, 1), result.stdout.str()
    return by_key(ctx.results())


def test_done_when_production_dropped_a_tool_output(ctx: Any, xdist_args: tuple[str, ...]) -> None:
    """The issue's acceptance: a session whose production window lost a tool
    output is context_loss under ``recorded`` and ok under ``full``; the
    session production kept whole is ok under both."""
    out = ctx.path / "imported"
    for name in ("openinference", "otel-spans", "otel-events"):
        assert main(_import_args(name, out)) == 0
    records = _run(ctx, out, *xdist_args)
    for (scenario, strategy, probe), record in records.items():
        assert record["error"] is None, record["error"]
        lost = probe == "last-user-evidence" and strategy == "recorded" and _is_dropped(record)
        if probe == "last-user-evidence":
            assert record["classification"] == ("context_loss" if lost else "ok"), (
                scenario,
                strategy,
            )
    losses = [k for k, r in records.items() if r["classification"] == "context_loss"]
    # One per instrumentation: the session whose last window lacked the lookup.
    assert len(losses) == 3 and all(k[1] == "recorded" for k in losses)
    for key in losses:
        # The record (and so the report) marks what production's window lacked:
        # the first look-up's call and output, messages 2 and 3; the system prompt was sent.
        parts = records[key]["window_trace"]
        dropped = [(p["from"], p["to"]) for p in parts if p["mark"] == "dropped"]
        assert dropped == [(2, 3)], parts
        first = next(p for p in parts if p["mark"] != "tools")
        assert first["mark"] == "kept" and first["role"] == "system"


def _is_dropped(record: dict[str, Any]) -> bool:
    return any(f.startswith("evidence-lookup_order") and v == "gone" for f, v in _survival(record))


def _survival(record: dict[str, Any]) -> list[tuple[str, str]]:
    found = record.get("fact_survival") or {}
    return [(k, v if isinstance(v, str) else str(v.get("state"))) for k, v in found.items()]


def test_a_turn_with_no_window_is_an_error_with_that_reason(ctx: Any) -> None:
    out = ctx.path / "imported"
    assert main(_import_args("openinference", out)) == 0
    sidecar = next(out.glob("*dropped-4417.windows.json"))
    document = json.loads(sidecar.read_text())
    document["windows"] = document["windows"][:-1]  # the probe's window
    sidecar.write_text(json.dumps(document))
    records = _run(ctx, out)
    for (scenario, strategy, _), record in records.items():
        if strategy == "recorded" and "4417" in scenario:
            assert "the trace holds no window production sent at message 9" in record["error"]
        else:
            assert record["error"] is None


def test_recorded_on_a_scenario_without_windows_says_so(ctx: Any) -> None:
    ctx.scenario(
        "plain",
        """
        id: plain
        turns:
          - user: The staging database listens on port 5432.
        probes:
          - id: port
            user: Which port does the staging database listen on?
            expect: {contains: "5432"}
        """,
    )
    result = ctx.run("--ctx-strategy=recorded")
    (record,) = ctx.results()
    assert "this scenario has no recorded windows" in record["error"]
    assert result.ret == 1


def test_a_recorded_windows_file_outside_the_root_is_refused(tmp_path: Path) -> None:
    from pytest_ctxeval.scenario.errors import ScenarioError
    from pytest_ctxeval.scenario.loader import load_conversations

    out = tmp_path / "suite"
    assert main(_import_args("openinference", out)) == 0
    shutil.copy(next(out.glob("*4417.windows.json")), tmp_path / "outside.json")
    path = next(out.glob("*4417.yaml"))
    text = path.read_text().replace(
        "recorded_windows: openinference-sess-dropped-4417.windows.json",
        "recorded_windows: ../outside.json",
    )
    path.write_text(text)
    with pytest.raises(
        ScenarioError, match=r"recorded_windows '../outside.json' leaves the scenario root"
    ):
        load_conversations(path)
    path.write_text(text.replace("../outside.json", "missing.json"))
    with pytest.raises(ScenarioError, match=r"recorded_windows 'missing.json': no such file"):
        load_conversations(path)
    (out / "bad.json").write_text('{"format": "ctxeval-recorded-windows/1", "windows": [{}]}')
    path.write_text(text.replace("../outside.json", "bad.json"))
    with pytest.raises(ScenarioError, match=r"windows\[0\]\.at_message: expected a whole number"):
        load_conversations(path)
    (out / "bad.json").write_text("{not json")
    with pytest.raises(ScenarioError, match=r"'bad.json': invalid JSON at line 1, column 2"):
        load_conversations(path)


def test_content_capture_off_is_an_error_not_empty_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = FIXTURES / "otel-nocontent.jsonl"
    assert main(["import", "otel", str(trace), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "its 9 chat span(s) hold no message content" in err and "no empty windows" in err
    assert not list(tmp_path.iterdir())
    # The older instrumentation's content sits in the logs: without them it says so too.
    assert main(["import", "otel", str(FIXTURES / "otel-events.jsonl"), "-o", str(tmp_path)]) == 1
    assert "no --logs file was given" in capsys.readouterr().err


def test_the_conversation_id_of_the_root_span_groups_its_chat_spans() -> None:
    """openai-v2's chat spans carry no conversation id; the agent's root span does."""
    assert not any(
        "gen_ai.conversation.id" in s["attrs"]
        for s in _raw_spans("otel-events")
        if s["attrs"].get("gen_ai.operation.name") == "chat"
    )
    result = import_traces(
        "otel",
        FIXTURES / "otel-events.jsonl",
        TraceOptions(logs=FIXTURES / "otel-events-logs.jsonl"),
    )
    assert sorted(d.data["id"] for d in result.built.drafts) == [
        "otel-events-sess-dropped-4417",
        "otel-events-sess-full-5120",
    ]
    # --session-key: an attribute every span has puts every call in one session.
    one = import_traces(
        "otel",
        FIXTURES / "otel-events.jsonl",
        TraceOptions(logs=FIXTURES / "otel-events-logs.jsonl", session_key="service.name"),
    )
    assert one.built.sessions == 2  # a resource attribute is no span attribute
    one = import_traces(
        "otel",
        FIXTURES / "otel-events.jsonl",
        TraceOptions(logs=FIXTURES / "otel-events-logs.jsonl", session_key="gen_ai.system"),
    )
    assert one.built.sessions == 1 and one.built.turns == 5


def test_longer_than_keeps_only_longer_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_import_args("openinference", tmp_path, "--longer-than", "2")) == 0
    assert [p.name for p in tmp_path.glob("*.yaml")] == ["openinference-sess-dropped-4417.yaml"]
    assert "skipped 1 sessions of 2 turn(s) or fewer (--longer-than)" in capsys.readouterr().out


def test_openinference_message_indices_sort_as_numbers() -> None:
    attrs: dict[str, Any] = {}
    for i in range(12):
        attrs[f"llm.input_messages.{i}.message.role"] = "user"
        attrs[f"llm.input_messages.{i}.message.content"] = f"message {i}"
    messages = flattened_messages(dict(reversed(list(attrs.items()))), "llm.input_messages")
    assert [m["content"] for m in messages] == [f"message {i}" for i in range(12)]


def test_redaction_runs_on_sessions_and_windows_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (FIXTURES / "openinference.jsonl").read_text()
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_text(
        text.replace(
            "Where is order 4417?",
            "Where is order 4417? My key is sk-proj-abcdefghijklmnop1234 and I am jane@example.com",
        )
    )
    out = tmp_path / "out"
    args = [
        "import",
        "openinference",
        str(leaky),
        "-o",
        str(out),
        "--redact-pattern",
        r"[\w.]+@example\.com",
    ]
    assert main(args) == 0
    assert "redacted" in capsys.readouterr().out
    for path in out.iterdir():
        written = path.read_text()
        assert "sk-proj-abcdefghijklmnop1234" not in written and "jane@example.com" not in written
    assert "[redacted]" in next(out.glob("*4417.yaml")).read_text()
    # The replayed window still matches the session it came from.
    window = json.loads(next(out.glob("*4417.windows.json")).read_text())["windows"][0]
    assert "[redacted]" in window["messages"][1]["content"]
    assert main([*args[:-1], "[unclosed"]) == 1
    assert "--redact-pattern '[unclosed': not a regular expression" in capsys.readouterr().err


def test_show_prints_the_window_production_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_import_args("openinference", tmp_path)) == 0
    capsys.readouterr()
    scenario = next(tmp_path.glob("*4417.yaml"))
    assert main(["show", str(scenario), "--strategy", "recorded", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "Nordpost" not in json.dumps(shown)  # production's last window had lost the lookup
    assert main(["show", str(scenario), "--strategy", "full", "--json"]) == 0
    assert "Nordpost" in capsys.readouterr().out


def test_the_fixtures_are_what_the_real_instrumentations_export(tmp_path: Path) -> None:
    """make_traces.py, run again with the libraries of the ``traces`` extra,
    exports sessions that import exactly as the committed fixtures do."""
    import subprocess
    import sys

    for module in ("openai", "opentelemetry.sdk", "openinference.instrumentation.openai"):
        pytest.importorskip(module, reason="the traces extra is not installed")
    pytest.importorskip("pydantic_ai", reason="the traces extra is not installed")
    pytest.importorskip("opentelemetry.instrumentation.openai_v2")
    script = FIXTURES / "make_traces.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for name, (fmt, traces, logs, _) in EXPORTS.items():
        options = TraceOptions(logs=tmp_path / logs if logs else None)
        fresh = import_traces(fmt, tmp_path / traces, options)
        committed = import_traces(
            fmt, FIXTURES / traces, TraceOptions(logs=FIXTURES / logs if logs else None)
        )
        counts = [
            (r.stats.chat_spans, r.built.turns, r.built.tool_calls, r.built.recorded)
            for r in (fresh, committed)
        ]
        assert counts[0] == counts[1], name
        windows = [
            [[m for w in ws for m in w.messages] for ws in r.built.windows.values()]
            for r in (fresh, committed)
        ]
        assert windows[0] == windows[1], name


@pytest.mark.parametrize(
    "fmt, name", [("langfuse", "langfuse.json"), ("langsmith", "langsmith.jsonl")]
)
def test_langfuse_and_langsmith_exports_give_the_same_sessions_and_windows(
    fmt: str, name: str
) -> None:
    """Hand-made in their documented shapes (make_exports.py) from the
    OpenInference export's requests: they import to the same windows."""
    ours = import_traces(fmt, FIXTURES / name, TraceOptions())
    reference = import_traces("openinference", FIXTURES / "openinference.jsonl", TraceOptions())
    assert (ours.built.sessions, ours.built.turns, ours.built.tool_calls, ours.built.recorded) == (
        2,
        5,
        4,
        8,
    )

    def windows(result: Any) -> list[Any]:
        return [
            [(w.at_message, w.messages, w.tools) for w in ws]
            for ws in result.built.windows.values()
        ]

    assert windows(ours) == windows(reference)
    if fmt == "langsmith":
        assert ours.stats.skipped == {"runs that are no llm call (chain)": 9}


def test_langsmith_reads_langchain_serialised_messages() -> None:
    from pytest_ctxeval.traces.exports import _message

    assert _message({"type": "human", "data": {"content": "hi"}}) == {
        "role": "user",
        "content": "hi",
    }
    ai = {
        "lc": 1,
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": 1}}]},
    }
    assert _message(ai) == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": 1}'},
            }
        ],
    }
    tool = {"type": "tool", "data": {"content": "42", "tool_call_id": "c1"}}
    assert _message(tool) == {"role": "tool", "content": "42", "tool_call_id": "c1"}


def test_phoenix_rest_spans_are_read_on_their_own_terms() -> None:
    """snake_case keys, the kind as a name outside the attributes, float
    nanoseconds or ISO times: not OTLP/JSON."""
    from pytest_ctxeval.scenario.importers._common import TranscriptError, Where
    from pytest_ctxeval.traces.phoenix import _iso, phoenix_span

    raw = {
        "name": "ChatCompletion",
        "context": {"trace_id": "ab" * 16, "span_id": "cd" * 8},
        "span_kind": "LLM",
        "parent_id": "ef" * 8,
        "start_time": 1.7964e18,
        "end_time": "2026-12-02T02:30:10.598752+00:00",
        "attributes": {"session.id": "s1"},
    }
    span = phoenix_span(raw, Where(item=0))
    assert (span.trace_id, span.span_id, span.parent_id) == ("ab" * 16, "cd" * 8, "ef" * 8)
    assert span.attributes == {"session.id": "s1", "openinference.span.kind": "LLM"}
    assert span.start_ns == int(1.7964e18) and span.end_ns == 1796178610598752000
    assert _iso("2026-11-30T08:00:00Z", "x") == "2026-11-30T08:00:00+00:00"
    with pytest.raises(TranscriptError, match="--since 'yesterday': expected an ISO date"):
        _iso("yesterday", "x")
