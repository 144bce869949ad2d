"""``ctxeval import``: real transcripts -> scenario YAML that the loader accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from work_count import growth

from pytest_ctxeval.cli import main
from pytest_ctxeval.evaluate.scoring import check_answer
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.importers import (
    IMPORTERS,
    Draft,
    TranscriptError,
    UnknownFormatError,
    Where,
    import_file,
    render_scenarios,
    slugify,
    write_scenarios,
)
from pytest_ctxeval.scenario.loader import parse_conversations

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
CASES = {
    "openai-jsonl": "chat.jsonl",
    "locomo": "locomo.json",
    "multichallenge": "multichallenge.jsonl",
    "tau-bench": "tau.json",
}
# Every fixture: each format's, and LoCoMo's second published layout.
FIXTURE_FILES = [(fmt, name) for fmt, name in CASES.items()] + [
    ("locomo", "locomo_conversation.json")
]
SCHEMA_ORDER = ["id", "description", "tags", "system", "turns", "sessions", "needles", "probes"]


def imported(fmt: str, path: Path | None = None) -> dict[str, str]:
    """File name -> YAML text for one fixture."""
    path = path or FIXTURES / CASES[fmt]
    return render_scenarios(import_file(fmt, path), str(path))


def load(files: dict[str, str]) -> dict[str, Conversation]:
    """Every file through the real loader; scenario id -> conversation."""
    out = {}
    for name, text in files.items():
        (conversation,) = parse_conversations(text, name)
        assert name == f"{conversation.id}.yaml"
        out[conversation.id] = conversation
    return out


def data(files: dict[str, str], name: str) -> dict[str, Any]:
    return yaml.safe_load(files[name])


def write_jsonl(path: Path, *records: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- every format -----------------------------------------------------------


def test_every_format_has_a_fixture() -> None:
    assert set(CASES) == set(IMPORTERS)


@pytest.mark.parametrize(("fmt", "name"), FIXTURE_FILES)
def test_every_emitted_file_loads_with_the_scenario_loader(fmt: str, name: str) -> None:
    files = imported(fmt, FIXTURES / name)
    assert files
    conversations = load(files)
    assert all(c.probes for c in conversations.values())


@pytest.mark.parametrize(("fmt", "name"), FIXTURE_FILES)
def test_output_is_deterministic(fmt: str, name: str, tmp_path: Path) -> None:
    source = str(FIXTURES / name)
    first = write_scenarios(import_file(fmt, source), tmp_path / "a", source)
    second = write_scenarios(import_file(fmt, source), tmp_path / "b", source)
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(("fmt", "name"), FIXTURE_FILES)
def test_files_are_block_style_in_schema_order(fmt: str, name: str) -> None:
    for text in imported(fmt, FIXTURES / name).values():
        keys = [line.split(":")[0] for line in text.splitlines() if line[:1].isalpha()]
        assert keys == [k for k in SCHEMA_ORDER if k in keys]
        header = re.split(r"^(?:turns|sessions):", text, maxsplit=1, flags=re.M)[0]
        assert "{" not in header  # no flow mappings in the header
        assert not re.search(r"[&*]id\d{3}", text)  # no YAML anchors or aliases


# --- openai-jsonl -------------------------------------------------------------


def test_openai_probe_is_the_last_user_message_and_later_messages_are_dropped() -> None:
    files = imported("openai-jsonl")
    doc = data(files, "chat-line-1.yaml")
    assert doc["probes"] == [
        {"id": "last-user", "user": "Which one should we bake more of tomorrow?"}
    ]
    assert "Croissants." not in files["chat-line-1.yaml"].split("probes:")[0].splitlines()
    assert doc["system"] == "You are a helpful assistant for a small bakery."
    assert "1 message(s) after the probe left out" in doc["description"]


def test_openai_tool_calls_keep_ids_parsed_args_and_names() -> None:
    conversation = load(imported("openai-jsonl"))["chat-line-1"]
    call_message, tool_message = conversation.messages[2], conversation.messages[3]
    (call,) = call_message["tool_calls"]
    assert call["id"] == "call_a1"
    assert json.loads(call["function"]["arguments"]) == {"day": "yesterday", "limit": 3}
    # The tool message had no name: it is looked up from the call id.
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_a1",
        "name": "sales_report",
        "content": '[{"item": "rye loaf", "count": 41}, {"item": "croissant", "count": 97}]',
    }


def test_openai_odd_content_and_unparseable_args() -> None:
    files = imported("openai-jsonl")
    doc = data(files, "support-ticket-42.yaml")
    assert doc["system"] == "Answer in English.\nBe brief."  # developer role, list of parts
    assert doc["turns"][0] == {"user": "My order never arrived.\n[image]"}
    calls = doc["turns"][1]["tool_calls"]
    assert calls[0]["args"] == {"raw": "{order: 7731"}  # not JSON: kept verbatim
    assert calls[1]["args"] == {"raw": '["7731"]'}  # JSON, but not an object
    assert doc["turns"][2:4] == [
        {"tool": {"name": "lookup_order", "output": '{"order": 7731, "status": "shipped"}'}},
        {"tool": {"name": "carrier_status", "output": ""}},  # null content
    ]
    assert doc["turns"][4] == {"user": "[system] The carrier API is down today."}
    assert doc["turns"][5] == {"assistant": "It shipped on Monday.\nTracking is delayed."}
    assert "assistant: |-\n      It shipped on Monday." in files["support-ticket-42.yaml"]


def test_openai_ids_are_slugified_and_made_unique() -> None:
    files = imported("openai-jsonl")
    assert list(files) == ["chat-line-1.yaml", "support-ticket-42.yaml", "support-ticket-42-2.yaml"]
    doc = data(files, "support-ticket-42-2.yaml")
    assert doc["probes"][0]["user"] == "12345"  # numeric content, upper-case role
    assert doc["turns"][1:] == [
        {"assistant": ""},
        {"tool": {"name": "legacy_clock", "output": "12:00"}},  # legacy "function" role
    ]


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Support Ticket #42", "support-ticket-42"),
        ("Café crème", "cafe-creme"),
        ("--a__b..c--", "a__b..c"),
        ("###", "scenario"),
        ("x" * 200, "x" * 80),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


@pytest.mark.parametrize(
    "content",
    [
        "yes",
        "null",
        "- not a list",
        "key: value",
        "  leading spaces\nand a second line",
        "trailing spaces   \nsecond",
        "tab\tinside\nline two",
        "ends with blank lines\n\n\n",
        "\nstarts with a newline",
        "unicode: ü € 😀 and a line\u2028separator",
        "# not a comment",
        "x" * 300,
        "",
    ],
)
def test_text_survives_the_yaml_round_trip(content: str, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "odd.jsonl",
        [{"role": "assistant", "content": content}, {"role": "user", "content": content}],
    )
    (conversation,) = load(imported("openai-jsonl", path)).values()
    assert conversation.messages[0]["content"] == content
    assert conversation.probes[0].question == content


# --- locomo -------------------------------------------------------------------


def all_turns(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """LoCoMo sessions are chats of a multi-session scenario."""
    return [turn for chat in doc["sessions"] for turn in chat["turns"]]


def test_locomo_sessions_in_numeric_order_with_dates_and_speakers() -> None:
    doc = data(imported("locomo"), "conv-1.yaml")
    assert [chat["label"] for chat in doc["sessions"]] == [
        "session 1, 1:56 pm on 8 May, 2023",
        "session 2, 10:02 am on 20 May, 2023",
        "session 10, 4:10 pm on 2 July, 2023",
    ]
    headers = [t["user"] for t in all_turns(doc) if t.get("user", "").startswith("(session")]
    # session_10 after session_2; date keys for sessions 11 and 12 have no turns.
    assert headers == [
        "(session 1, 1:56 pm on 8 May, 2023)",
        "(session 2, 10:02 am on 20 May, 2023)",
        "(session 10, 4:10 pm on 2 July, 2023)",
    ]
    # What the model is sent: D1:1 is cited as evidence, so its text comes
    # back by its needle, at its own message.
    messages = load(imported("locomo"))["conv-1"].messages
    assert messages[1:4] == [
        {"role": "user", "content": "Ana: I adopted a dog last week, her name is Pepper."},
        {"role": "assistant", "content": "Ben: Congrats! What breed is she?"},
        {
            "role": "user",
            "content": "Ana: A beagle mix. [shares a photo: a photo of a small dog on a couch]",
        },
    ]
    assert {"user": "Ana: [shares a photo: a photo of a clay bowl]"} in all_turns(doc)  # no text


def test_locomo_qa_items_become_probes() -> None:
    doc = data(imported("locomo"), "conv-1.yaml")
    probes = {p["id"]: p for p in doc["probes"]}
    assert list(probes) == ["qa-1", "qa-2", "qa-3", "qa-4"]
    # Scored as the benchmark scores them: token F1 against the gold answer.
    assert probes["qa-1"]["expect"] == {"f1": "Pepper"}
    assert probes["qa-2"]["expect"] == {"f1": "2022"}  # a number in the file
    assert "expect" not in probes["qa-4"]  # no answer: scored against the full context
    assert doc["tags"] == [
        "imported",
        "locomo",
        "category-2",
        "category-3",
        "category-4",
        "category-5",
    ]
    assert [n["id"] for n in doc["needles"]] == ["evidence-d1-1", "evidence-d2-1"]
    assert "constraints" not in doc


def test_locomo_category_5_expects_an_abstention() -> None:
    conversation = load(imported("locomo"))["conv-1"]
    expect = next(p.expect for p in conversation.probes if p.id == "qa-3")
    assert expect is not None and expect.abstains is True
    assert check_answer("The conversation does not say; I don't know.", expect) == []
    assert check_answer("There is no information about that.", expect) == []
    # Naming the tempting answer while declining it is still an abstention.
    assert check_answer("There is no mention of a violin anywhere.", expect) == []
    assert check_answer("Pepper plays the violin.", expect)
    assert check_answer("Pepper plays the drums.", expect)  # not an abstention either


def test_locomo_without_speaker_names_or_sample_id() -> None:
    doc = data(imported("locomo"), "locomo-1.yaml")
    assert all_turns(doc) == [
        {"user": "(session 1)"},
        {"user": "Cleo: My favourite tea is oolong."},
        {"assistant": "Dev: Mine is mint."},
    ]
    assert "between Cleo (user) and Dev (assistant)" in doc["description"]
    # No category, but an adversarial_answer and no answer: still an abstention probe.
    assert doc["probes"][1]["expect"] == {"abstains": True}
    assert doc["tags"] == ["imported", "locomo", "category-1"]


def test_locomo_many_sessions_sort_as_numbers(tmp_path: Path) -> None:
    conversation: dict[str, Any] = {"speaker_a": "A", "speaker_b": "B"}
    for k in range(120, 0, -1):  # written in reverse to rule out file order
        conversation[f"session_{k}"] = [{"speaker": "A", "dia_id": f"D{k}:1", "text": f"turn {k}"}]
    path = tmp_path / "many.json"
    path.write_text(
        json.dumps({"conversation": conversation, "qa": [{"question": "q?", "answer": 1}]})
    )
    doc = data(imported("locomo", path), "many-0.yaml")
    said = [t["user"] for t in all_turns(doc) if not t["user"].startswith("(")]
    assert said == [f"A: turn {k}" for k in range(1, 121)]


# --- multichallenge -------------------------------------------------------------


def test_multichallenge_rubric_goes_into_the_description() -> None:
    files = imported("multichallenge")
    doc = data(files, "multichallenge-66f2a1c0e4.yaml")
    assert doc["description"].splitlines()[:3] == [
        "MultiChallenge item 66f2a1c0e4, axis INSTRUCTION_RETENTION",
        "Judge question: Does the response use exactly three bullet points?",
        "Pass criteria: YES",
    ]
    assert doc["tags"] == ["imported", "multichallenge", "instruction_retention"]
    assert doc["probes"] == [{"id": "last-user", "user": "How do I keep basil alive indoors?"}]


def test_multichallenge_drops_messages_after_the_last_user_turn() -> None:
    doc = data(imported("multichallenge"), "multichallenge-7a09be11d2.yaml")
    assert doc["turns"] == [{"user": "I am allergic to peanuts."}, {"assistant": ""}]
    assert doc["probes"][0]["user"] == "Suggest a snack for my hike."
    assert "Judge question" not in doc["description"]  # no TARGET_QUESTION in the item


# --- tau-bench ------------------------------------------------------------------


def test_tau_bench_plants_probes_about_tool_output_values() -> None:
    doc = data(imported("tau-bench"), "tau-bench-task-7-trial-1.yaml")
    probes = doc["probes"]
    assert probes[0] == {"id": "last-user", "user": "The desk lamp, please refund to my gift card."}
    # booleans, the string "False" and the 1-digit age are skipped; non-JSON output is
    # ignored; the user id and the city are said elsewhere in the session (the agent
    # says "Fort Worth"), so losing the output would not fail a probe about them.
    assert probes[1:] == [
        {
            "id": "tool-value-1",
            "user": "What was the address.zip in the result of get_user_details?",
            "expect": {"contains": "76101"},
            "evidence": ["evidence-get_user_details-1"],
        },
    ]
    assert doc["turns"][-1] == {
        "assistant": "I found your account in Fort Worth. Which item exactly?"
    }


def test_tau_bench_values_come_only_from_kept_tool_outputs(tmp_path: Path) -> None:
    traj = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "name": "early", "content": json.dumps({"code": "KEEP-1"})},
        {"role": "user", "content": "last"},
        {"role": "tool", "name": "late", "content": json.dumps({"code": "DROP-2"})},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"task_id": 1, "traj": traj}]))
    doc = data(imported("tau-bench", path), "tau-bench-task-1.yaml")
    assert [p.get("expect") for p in doc["probes"]] == [None, {"contains": "KEEP-1"}]


# --- large input ----------------------------------------------------------------


def host_checks(hosts: int) -> list[dict[str, Any]]:
    """A session of ``hosts`` x 4 turns: a question, a tool call, its output, an answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
    for i in range(hosts):
        messages += [
            {"role": "user", "content": f"Check host {i}.\nIt is in rack {i % 40}."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "ping", "arguments": json.dumps({"host": i})},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": json.dumps({"host": i, "ms": i % 97}),
            },
            {"role": "assistant", "content": f"Host {i} answers in {i % 97} ms."},
        ]
    messages.append({"role": "user", "content": "Which host was slowest?"})
    return messages


def test_five_thousand_turns_import_and_load(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "big.jsonl", {"messages": host_checks(1250)})
    written = write_scenarios(import_file("openai-jsonl", path), tmp_path / "out", str(path))
    (conversation,) = parse_conversations(written[0].read_text(encoding="utf-8"), str(written[0]))
    assert len(conversation.messages) == 1 + 5000
    assert conversation.messages[-1] == {
        "role": "assistant",
        "content": "Host 1249 answers in 85 ms.",
    }


def test_the_import_is_linear_in_the_session(tmp_path: Path) -> None:
    # Work counted, not timed: twice the turns, twice the calls (quadratic: four times).
    def import_hosts(hosts: int) -> None:
        path = write_jsonl(tmp_path / f"hosts-{hosts}.jsonl", {"messages": host_checks(hosts)})
        write_scenarios(import_file("openai-jsonl", path), tmp_path / f"out-{hosts}", str(path))

    assert growth(import_hosts, 250) < 2.3


# --- errors ---------------------------------------------------------------------

MSG = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("fmt", "content", "where", "message"),
    [
        ("openai-jsonl", "", ":", "file is empty"),
        ("locomo", "  \n\n", ":", "file is empty"),
        ("openai-jsonl", f"{json.dumps([MSG])}\n\n{{oops\n", ":3:", "invalid JSON"),
        ("openai-jsonl", '"just text"\n', ":1:", "expected a list of messages or an object"),
        ("openai-jsonl", json.dumps([{"content": "x"}]), ":1:", "messages[0]: missing 'role'"),
        ("openai-jsonl", json.dumps([{"role": "narrator"}]), ":1:", "unknown role 'narrator'"),
        ("openai-jsonl", json.dumps([{"role": "assistant"}]), ":1:", "no user message"),
        ("openai-jsonl", json.dumps({"messages": "hi"}), ":1:", "messages: expected a list"),
        ("locomo", "[]", ":", "the list is empty"),
        ("locomo", '"text"', ":", "expected a JSON list of objects"),
        ("locomo", "[{}, {}]", ":item 0:", "missing 'conversation'"),
        (
            "locomo",
            '[{"conversation": {"session_1_date_time": "x"}}]',
            ":item 0:",
            "no session_<k>",
        ),
        (
            "locomo",
            json.dumps(
                [{"conversation": {"session_1": [{"speaker": "A", "text": "t"}]}, "qa": [{}]}]
            ),
            ":item 0:",
            "qa[0]: missing 'question'",
        ),
        (
            "locomo",
            json.dumps([{"conversation": {"session_1": [{"speaker": "A", "text": "t"}]}}]),
            ":item 0:",
            "no 'qa' items",
        ),
        (
            "locomo",
            json.dumps([{"conversation": {"session_2": "not a list"}, "qa": []}]),
            ":item 0:",
            "conversation.session_2: expected a list of turns, got a string",
        ),
        ("multichallenge", json.dumps({"AXIS": "X"}), ":1:", "missing 'CONVERSATION'"),
        ("multichallenge", "[1]", ":1:", "expected an object, got a list"),
        ("tau-bench", json.dumps([{"task_id": 1}]), ":item 0:", "missing 'traj'"),
        ("tau-bench", json.dumps([{"traj": [MSG]}, 3]), ":item 1:", "expected a trajectory object"),
        ("tau-bench", '[{"traj": [}', ":1:", "invalid JSON"),
    ],
)
def test_bad_input_gives_one_clear_error(
    fmt: str,
    content: str,
    where: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "input.txt"
    path.write_text(content, encoding="utf-8")
    assert main(["import", fmt, str(path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ctxeval import: {path}{where} ")
    assert message in err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_bad_conversation_writes_nothing(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mixed.jsonl", [MSG], [{"role": "assistant"}])
    with pytest.raises(TranscriptError, match=r"mixed\.jsonl:2: messages: no user message"):
        write_scenarios(import_file("openai-jsonl", path), tmp_path / "out", str(path))
    assert not (tmp_path / "out").exists()


def test_a_draft_the_schema_rejects_is_reported_with_its_place() -> None:
    draft = Draft(Where(line=3), {"id": "x", "probes": []})
    with pytest.raises(
        TranscriptError, match=r"^f\.jsonl:3: cannot make a valid scenario \(probes"
    ):
        render_scenarios([draft], "f.jsonl")
    with pytest.raises(UnknownFormatError, match="known formats: locomo, multichallenge"):
        import_file("sharegpt", FIXTURES / "chat.jsonl")


# --- CLI ------------------------------------------------------------------------


def test_cli_writes_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = FIXTURES / "locomo.json"
    assert main(["import", "locomo", str(source), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out == f"{source}: 2 scenarios written to {tmp_path / 'out'}\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["conv-1.yaml", "locomo-1.yaml"]
    assert main(["validate", str(tmp_path / "out")]) == 0


def test_cli_unknown_format_lists_the_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "sharegpt", str(FIXTURES / "chat.jsonl"), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "ctxeval import: unknown format 'sharegpt'; "
        "known formats: langfuse, langsmith, locomo, multichallenge, openai-jsonl, openinference, "
        "otel, phoenix, tau-bench\n"
    )


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["import", "openai-jsonl", str(missing), "-o", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == f"ctxeval import: {missing}: file not found\n"


def test_cli_output_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("")
    assert main(["import", "tau-bench", str(FIXTURES / "tau.json"), "-o", str(blocker)]) == 1
    assert capsys.readouterr().err.startswith(f"ctxeval import: cannot write to {blocker}: ")


def test_cli_help_names_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in IMPORTERS)


# --- locomo: both published layouts, evidence, sessions -------------------------

CONVERSATION_FILE = FIXTURES / "locomo_conversation.json"


def test_locomo_one_file_per_conversation_imports() -> None:
    # speakers, session_N, session_N_date_time and qa at the top level.
    files = imported("locomo", CONVERSATION_FILE)
    assert list(files) == ["conv-7.yaml"]
    doc = data(files, "conv-7.yaml")
    assert [chat["label"] for chat in doc["sessions"]] == [
        "session 1, 1:56 pm on 8 May, 2023",
        "session 2, 10:37 am on 27 June, 2023",
        "session 3, 8:18 pm on 6 July, 2023",
    ]
    assert "between Caroline (user) and Melanie (assistant)" in doc["description"]
    assert len(doc["probes"]) == 10
    assert load(files)["conv-7"].messages[1] == {
        "role": "user",
        "content": "Caroline: Hey Mel! I went to a LGBTQ support group yesterday and it was so "
        "powerful.",
    }


def test_locomo_both_layouts_give_the_same_scenario(tmp_path: Path) -> None:
    single = json.loads(CONVERSATION_FILE.read_text(encoding="utf-8"))
    top = {k: v for k, v in single.items() if k in ("sample_id", "qa")}
    listed = [{**top, "conversation": {k: v for k, v in single.items() if k not in top}}]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(listed), encoding="utf-8")

    def without_origin(files: dict[str, str]) -> dict[str, Any]:
        doc = data(files, "conv-7.yaml")
        doc["description"] = doc["description"].rsplit("\nImported from", 1)[0]
        return doc

    assert without_origin(imported("locomo", path)) == without_origin(
        imported("locomo", CONVERSATION_FILE)
    )


def test_locomo_conversation_file_without_sample_id_is_named_after_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "conv-26.json"
    path.write_text(
        json.dumps(
            {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I live in Oslo."}],
                "qa": [{"question": "Where does A live?", "answer": "Oslo", "category": 4}],
            }
        ),
        encoding="utf-8",
    )
    assert list(imported("locomo", path)) == ["conv-26.yaml"]


def test_locomo_evidence_turns_become_needles_the_probes_name() -> None:
    doc = data(imported("locomo", CONVERSATION_FILE), "conv-7.yaml")
    needles = {n["id"]: n for n in doc["needles"]}
    probes = {p["id"]: p for p in doc["probes"]}
    # "D2:04" is D2:4; "D3:3; D3:4" names two turns; D9:1 names no turn.
    assert probes["qa-5"]["evidence"] == ["evidence-d2-4"]
    assert probes["qa-7"]["evidence"] == ["evidence-d3-3", "evidence-d3-4"]
    assert probes["qa-9"]["evidence"] == ["evidence-d1-3"]
    assert "Evidence naming no turn, left out: D9:1." in doc["description"]
    assert needles["evidence-d3-2"] == {
        "id": "evidence-d3-2",
        "text": "Melanie: So brave. We adopted a puppy named Oliver.",
        "answer": "Oliver",
        "turn": 13,  # after three session headers and nine turns
    }
    # A gold answer the turn does not state is no answer of its needle.
    assert "answer" not in needles["evidence-d1-1"]  # "7 May 2023" is worked out, not said
    conversation = load(imported("locomo", CONVERSATION_FILE))["conv-7"]
    assert conversation.messages[12]["content"] == needles["evidence-d3-2"]["text"]
    facts = {f.id: f for f in conversation.facts}
    assert set(facts) == set(needles)
    assert facts["evidence-d3-2"].answers == ("Oliver",)


def test_locomo_evidence_leaves_the_session_as_it_was() -> None:
    # The same conversation imported without any evidence is sent identically.
    single = json.loads(CONVERSATION_FILE.read_text(encoding="utf-8"))
    with_evidence = load(imported("locomo", CONVERSATION_FILE))["conv-7"]
    for item in single["qa"]:
        item["evidence"] = []
    files = render_scenarios(IMPORTERS["locomo"](json.dumps(single), "conv-7.json"), "x")
    without = load(files)["conv-7"]
    assert without.facts == []
    assert with_evidence.messages == without.messages
    assert with_evidence.session_starts == without.session_starts


def test_locomo_split_sessions_say_why_strategies_lose() -> None:
    doc = data(imported("locomo", CONVERSATION_FILE), "conv-7.yaml")
    assert "one relationship over months" in doc["description"]
    assert "--sessions=join" in doc["description"]


def test_locomo_sessions_join_makes_one_chat(tmp_path: Path) -> None:
    source = str(CONVERSATION_FILE)
    joined = render_scenarios(import_file("locomo", source, sessions="join"), source)
    split = render_scenarios(import_file("locomo", source, sessions="split"), source)
    assert split == imported("locomo", CONVERSATION_FILE)  # split is the default
    doc = data(joined, "conv-7.yaml")
    assert "sessions" not in doc
    assert [t["user"] for t in doc["turns"] if t.get("user", "").startswith("(session")] == [
        "(session 1, 1:56 pm on 8 May, 2023)",
        "(session 2, 10:37 am on 27 June, 2023)",
        "(session 3, 8:18 pm on 6 July, 2023)",
    ]
    assert "joined into one chat" in doc["description"]
    one, several = load(joined)["conv-7"], load(split)["conv-7"]
    assert one.session_starts == [] and len(several.session_starts) == 2
    assert one.messages == several.messages  # the same text, one chat
    assert data(joined, "conv-7.yaml")["needles"] == data(split, "conv-7.yaml")["needles"]


def test_cli_sessions_join(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    args = ["import", "locomo", str(CONVERSATION_FILE), "-o", str(out), "--sessions=join"]
    assert main(args) == 0
    assert "turns:" in (out / "conv-7.yaml").read_text(encoding="utf-8")
    capsys.readouterr()
    tau = ["import", "tau-bench", str(FIXTURES / "tau.json"), "-o", str(out), "--sessions=join"]
    assert main(tau) == 1
    err = capsys.readouterr().err
    assert "--sessions=join applies to locomo only" in err and "Traceback" not in err


def test_imported_locomo_passes_under_full_when_the_evidence_is_there(ctx: Any) -> None:
    # The mock model answers from what it is sent: with the whole conversation
    # it answers what the turns state, and the benchmark's scoring accepts it.
    out = ctx.path / "imported"
    source = str(CONVERSATION_FILE)
    write_scenarios(import_file("locomo", source), out, source)
    result = ctx.run("imported/conv-7.yaml", "--ctx-strategy=full")
    records = {r["probe"]: r for r in ctx.results()}
    ok = sorted(p for p, r in records.items() if r["classification"] == "ok")
    # qa-8 asks for a date worked out from "yesterday", qa-9 for an inference,
    # qa-10 (adversarial) for an abstention: the oracle only quotes turns.
    assert ok == [f"qa-{n}" for n in range(1, 8)], result.stdout.str()
    assert {records[f"qa-{n}"]["classification"] for n in (8, 9, 10)} == {"model_miss"}
    assert all(
        state == "verbatim" for r in records.values() for state in r["fact_survival"].values()
    )
    assert "evidence survival" in result.stdout.str()


# --- tau-bench: probes worth asking ------------------------------------------------


def test_tau_bench_probes_the_last_substantive_user_turn() -> None:
    doc = data(imported("tau-bench"), "tau-bench-task-12-trial-0.yaml")
    # "Great, thanks so much! ###STOP###" asks nothing: the request before it is the probe.
    assert doc["probes"][0] == {
        "id": "last-user",
        "user": "Replace Noah Kim with Ava Lee on ZFA04Y.",
    }
    assert doc["turns"][-1] == {"assistant": "Both found. What should I change?"}
    assert "2 message(s) after the probe left out" in doc["description"]


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("###STOP###", False),
        ("Thank you so much, that's all I need! ###STOP###", False),
        ("No, that's all. Have a nice day!", False),
        ("Great, thanks! Bye.", False),
        ("Yes, please proceed with the refund.", True),
        ("Thanks. Also, what is my order total?", True),
        ("Hi", True),
    ],
)
def test_tau_bench_what_asks_something(text: str, asks: bool) -> None:
    from pytest_ctxeval.scenario.importers.tau_bench import asks_something

    assert asks_something(text) is asks


def test_tau_bench_asks_nothing_about_a_tool_called_more_than_once() -> None:
    # "The first call to get_reservation_details" names a call by its order,
    # which the mock model cannot follow: no such probe is made.
    drafts = import_file("tau-bench", FIXTURES / "tau.json")
    twice = next(d for d in drafts if d.data["id"] == "tau-bench-task-12-trial-0")
    assert [p["id"] for p in twice.data["probes"]] == ["last-user"]
    assert "needles" not in twice.data
    assert twice.kept == 1
    assert twice.dropped == {
        "tool values of a tool called more than once (the call has no name to ask by)": 4,
        "goodbyes after the last request (###STOP### and thanks)": 1,
    }


def test_tau_bench_asked_tool_outputs_are_facts_at_their_own_message() -> None:
    source = json.loads((FIXTURES / "tau.json").read_text(encoding="utf-8"))[1]["traj"]
    outputs = [m["content"] for m in source if m["role"] == "tool"]
    conversation = load(imported("tau-bench"))["tau-bench-task-airline-3"]
    tool_messages = [m["content"] for m in conversation.messages if m["role"] == "tool"]
    assert tool_messages == outputs  # planted back where they were
    facts = {f.id: f for f in conversation.facts}
    assert facts["evidence-search_flights-1"].text == outputs[0]
    assert facts["evidence-search_flights-1"].answers == ("HAT045", "1234.5")


def trajectory(tmp_path: Path, traj: list[dict[str, Any]]) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"task_id": 1, "traj": traj}]))
    return path


def test_tau_bench_a_value_said_elsewhere_makes_no_probe(tmp_path: Path) -> None:
    traj = [
        {"role": "user", "content": "Find my order."},
        {"role": "tool", "name": "find", "content": json.dumps({"id": "W123", "city": "Oslo"})},
        {"role": "assistant", "content": "Your order W123 is ready."},
        {"role": "user", "content": "Where does it ship?"},
    ]
    (draft,) = import_file("tau-bench", trajectory(tmp_path, traj))
    assert [p.get("expect") for p in draft.data["probes"]] == [None, {"contains": "Oslo"}]
    assert draft.dropped == {
        "tool values said elsewhere in the session (losing the output would not fail them)": 1
    }


def test_tau_bench_a_message_ending_the_chat_is_never_the_probe(tmp_path: Path) -> None:
    traj = [
        {"role": "user", "content": "Cancel my order, please."},
        {"role": "assistant", "content": "Done."},
        {
            "role": "user",
            "content": "Great, that's everything I needed. Have a good one! ###STOP###",
        },
    ]
    (draft,) = import_file("tau-bench", trajectory(tmp_path, traj))
    assert draft.data["probes"] == [{"id": "last-user", "user": "Cancel my order, please."}]
    only_stop = [{"role": "user", "content": "Bye now, so long. ###STOP###"}]
    with pytest.raises(TranscriptError, match="traj: no user message asks anything"):
        import_file("tau-bench", trajectory(tmp_path, only_stop))


def test_import_prints_how_many_probe_candidates_it_kept_and_why_it_dropped_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = FIXTURES / "tau.json"
    assert main(["import", "tau-bench", str(source), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"{source}: probes: 6 of 14 candidates kept; dropped: 4 tool values of a tool called "
        "more than once (the call has no name to ask by), 3 tool values said elsewhere in the "
        "session (losing the output would not fail them), 1 goodbyes after the last request "
        "(###STOP### and thanks)"
    )


def test_every_imported_tool_value_probe_is_one_the_mock_answers_with_everything(
    ctx: Any,
) -> None:
    for name, text in imported("tau-bench").items():
        ctx.write(f"imported/{name}", text)
    result = ctx.run("imported", "--ctx-strategy=full", "--ctx-fail-on=never")
    assert result.ret == 0
    values = [r for r in ctx.results() if r["probe"].startswith("tool-value")]
    assert values and all(r["classification"] == "ok" for r in values), [
        (r["scenario"], r["probe"], r["classification"]) for r in values
    ]


def test_tau_bench_a_bare_tool_output_lands_after_its_made_up_call(tmp_path: Path) -> None:
    # A tool message with no call before it gets one made up: one message later.
    traj = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "name": "lookup", "content": json.dumps({"code": "KEEP-1"})},
        {"role": "user", "content": "What now?"},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"task_id": 1, "traj": traj}]))
    files = imported("tau-bench", path)
    assert data(files, "tau-bench-task-1.yaml")["needles"][0]["turn"] == 3
    conversation = load(files)["tau-bench-task-1"]
    assert conversation.messages[2]["content"] == json.dumps({"code": "KEEP-1"})


def test_locomo_a_cited_turn_without_text_is_no_evidence(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    session = [
        {"speaker": "A", "dia_id": "D1:1", "text": "I live in Oslo."},
        {"speaker": "B", "dia_id": "D1:2"},
    ]
    qa = [{"question": "Where does A live?", "answer": "Oslo", "evidence": ["D1:1", "D1:2"]}]
    path.write_text(json.dumps({"session_1": session, "qa": qa}), encoding="utf-8")
    doc = data(imported("locomo", path), "empty.yaml")
    assert [n["id"] for n in doc["needles"]] == ["evidence-d1-1"]
    assert doc["probes"][0]["evidence"] == ["evidence-d1-1"]
