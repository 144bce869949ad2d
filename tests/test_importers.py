"""``ctxeval import``: real transcripts -> scenario YAML that the loader accepts."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

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
SCHEMA_ORDER = ["id", "description", "tags", "system", "turns", "sessions", "probes"]


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


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_every_emitted_file_loads_with_the_scenario_loader(fmt: str) -> None:
    files = imported(fmt)
    assert files
    conversations = load(files)
    assert all(c.probes for c in conversations.values())


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_output_is_deterministic(fmt: str, tmp_path: Path) -> None:
    source = str(FIXTURES / CASES[fmt])
    first = write_scenarios(import_file(fmt, source), tmp_path / "a", source)
    second = write_scenarios(import_file(fmt, source), tmp_path / "b", source)
    assert [p.name for p in first] == [p.name for p in second]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_files_are_block_style_in_schema_order(fmt: str) -> None:
    for text in imported(fmt).values():
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
    assert all_turns(doc)[1:4] == [
        {"user": "Ana: I adopted a dog last week, her name is Pepper."},
        {"assistant": "Ben: Congrats! What breed is she?"},
        {"user": "Ana: A beagle mix. [shares a photo: a photo of a small dog on a couch]"},
    ]
    assert {"user": "Ana: [shares a photo: a photo of a clay bowl]"} in all_turns(doc)  # no text


def test_locomo_qa_items_become_probes() -> None:
    doc = data(imported("locomo"), "conv-1.yaml")
    probes = {p["id"]: p for p in doc["probes"]}
    assert list(probes) == ["qa-1", "qa-2", "qa-3", "qa-4"]
    assert probes["qa-1"]["expect"] == {"contains_any": ["Pepper"]}
    assert probes["qa-2"]["expect"] == {"contains_any": ["2022"]}  # a number in the file
    assert "expect" not in probes["qa-4"]  # no answer: scored against the full context
    assert doc["tags"] == [
        "imported",
        "locomo",
        "category-2",
        "category-3",
        "category-4",
        "category-5",
    ]
    assert "needles" not in doc and "constraints" not in doc


def test_locomo_category_5_expects_an_abstention() -> None:
    conversation = load(imported("locomo"))["conv-1"]
    expect = next(p.expect for p in conversation.probes if p.id == "qa-3")
    assert expect is not None and expect.not_contains == "violin"
    assert check_answer("The conversation does not say; I don't know.", expect) == []
    assert check_answer("There is no information about that.", expect) == []
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
    assert doc["probes"][1]["expect"]["not_contains"] == "cocoa"
    assert "regex" in doc["probes"][1]["expect"]
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
    # booleans, the string "False" and the 1-digit age are skipped; non-JSON output is ignored.
    assert probes[1:] == [
        {
            "id": "tool-value-1",
            "user": "What was the user_id in the result of get_user_details?",
            "expect": {"contains": "mia_garcia_4516"},
        },
        {
            "id": "tool-value-2",
            "user": "What was the address.city in the result of get_user_details?",
            "expect": {"contains": "Fort Worth"},
        },
        {
            "id": "tool-value-3",
            "user": "What was the address.zip in the result of get_user_details?",
            "expect": {"contains": "76101"},
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


def test_five_thousand_turns_import_quickly_and_load(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
    for i in range(1250):
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
    path = write_jsonl(tmp_path / "big.jsonl", {"messages": messages})
    start = time.perf_counter()
    written = write_scenarios(import_file("openai-jsonl", path), tmp_path / "out", str(path))
    elapsed = time.perf_counter() - start
    # Generous: catches accidental quadratic work, not machine speed (~1 s here).
    assert elapsed < 10, f"import took {elapsed:.1f} s"
    (conversation,) = parse_conversations(written[0].read_text(encoding="utf-8"), str(written[0]))
    assert len(conversation.messages) == 1 + 5000
    assert conversation.messages[-1] == {
        "role": "assistant",
        "content": "Host 1249 answers in 85 ms.",
    }


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
        "known formats: locomo, multichallenge, openai-jsonl, tau-bench\n"
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
