"""Fact survival: everything the request shows counts as visible, except the
probe question; answers match as whole words and only when the session does
not mention them anyway."""

from __future__ import annotations

import json
from typing import Any

import pytest
from inline_scenarios import parse_inline

from pytest_ctxeval.evaluate.survival import fact_survival
from pytest_ctxeval.scenario.build import Fact
from pytest_ctxeval.strategies.base import Window
from pytest_ctxeval.strategies.headtail import INDEX_INTRO, HeadTailStrategy

PORT = Fact("port", "needle", "STAGING_PORT = 5433", answers=("5433",))
PROBE = {"role": "user", "content": "Which port does staging use?"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def write_file_call(content: str) -> dict[str, Any]:
    arguments = json.dumps({"path": "settings.py", "content": content})
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "write_file", "arguments": arguments},
            }
        ],
    }


def state(fact: Fact, *messages: dict[str, Any], **window: Any) -> str:
    return fact_survival([fact], Window(messages=[*messages, PROBE], **window))[fact.id]


# -- everything sent is context ----------------------------------------------------------------


def test_a_fact_only_in_tool_call_arguments_is_visible():
    assert state(PORT, user("Set the port."), write_file_call("STAGING_PORT = 5433")) == "verbatim"


def test_tool_call_arguments_that_are_not_json_are_read_whole():
    call = write_file_call("")
    call["tool_calls"][0]["function"]["arguments"] = "STAGING_PORT = 5433"
    assert state(PORT, call) == "verbatim"


def test_a_fact_in_a_tool_definition_is_visible():
    tool = {
        "type": "function",
        "function": {
            "name": "deploy",
            "description": "Deploys to staging.",
            "parameters": {
                "type": "object",
                "properties": {"port": {"type": "string", "description": "STAGING_PORT = 5433"}},
            },
        },
    }
    assert state(PORT, user("Deploy it."), tools=[tool]) == "verbatim"
    assert state(PORT, user("Deploy it.")) == "gone"


def preview_window(listing: str) -> Window:
    """A headtail window whose stored middle holds the secret row."""
    rows = "\n".join(json.dumps({"row": i, "status": "ok"}) for i in range(60)).splitlines()
    rows.insert(30, "SPECIAL_API_KEY = 'secret-9981'")
    strategy = HeadTailStrategy(listing=listing)
    for message in [user("Dump the rows."), user("\n".join(rows)), user("Thanks."), PROBE]:
        strategy.add(message)
    return strategy.window()


KEY = Fact("key", "needle", "SPECIAL_API_KEY = 'secret-9981'", answers=("secret-9981",))


def test_a_needle_shown_in_a_memory_preview_is_verbatim_not_in_store():
    window = preview_window("tool")
    # The premise: the messages lack it, the retrieve_memory listing previews it.
    assert all("secret-9981" not in (m.get("content") or "") for m in window.messages)
    assert "secret-9981" in window.tools[0]["function"]["description"]
    assert fact_survival([KEY], window) == {"key": "verbatim"}


def test_a_needle_shown_in_the_memory_index_message_is_verbatim_not_in_store():
    window = preview_window("message")
    # The premise: only the memory index previews it; the tool does not.
    (index,) = [m for m in window.messages if "secret-9981" in (m.get("content") or "")]
    assert index["content"].startswith(INDEX_INTRO)
    assert "secret-9981" not in json.dumps(window.tools)
    assert fact_survival([KEY], window) == {"key": "verbatim"}
    # Without the index the needle is only in the store.
    rest = Window(
        messages=[m for m in window.messages if m is not index],
        tools=window.tools,
        retrievable=window.retrievable,
    )
    assert fact_survival([KEY], rest) == {"key": "in_store"}


# -- the probe question is not the fact ---------------------------------------------------------


def test_the_probe_question_itself_does_not_keep_a_fact_alive():
    probe = user("Is STAGING_PORT = 5433 still right?")
    window = Window(messages=[user("Hello."), probe])
    assert fact_survival([PORT], window) == {"port": "gone"}


# -- answers as whole words, against a control --------------------------------------------------


def test_an_answer_inside_a_longer_number_is_not_evidence():
    fact = Fact("n", "needle", "The retry limit is 15.", answers=("15",))
    assert state(fact, user("We sent 150 requests in 2015.")) == "gone"
    assert state(fact, user("Retries: 15, as agreed.")) == "transformed"


def test_answers_match_across_case_and_whitespace():
    fact = Fact("code", "needle", "The launch code is ZEBRA-42.", answers=("zebra-42",))
    assert state(fact, user("Launch code:\n  Zebra-42")) == "transformed"
    texts = state(Fact("t", "needle", "The launch  code\nis ZEBRA-42.", ()), user(fact.text))
    assert texts == "verbatim"


LOGS = """
    id: logs
    turns:
      - user: Here are the worker logs.
      - assistant: "12:15:03 worker started\\n12:15:09 worker idle"
      - user: Thanks.
      - assistant: OK.
    needles:
      - {id: retries, turn: 3, text: "The retry limit is 15.", question: q, answer: "15"}
    probes: [{id: p, needle: retries}]
"""


def test_an_answer_the_session_mentions_anyway_is_not_evidence():
    (conversation,) = parse_inline(LOGS)
    assert conversation.coincidental_answers == {"retries": frozenset({"15"})}
    # The fact's message is gone; the log timestamps with "15" are still there.
    window = Window(messages=[*conversation.messages[:2], PROBE])
    facts = conversation.facts
    assert fact_survival(facts, window) == {"retries": "transformed"}  # fooled without control
    controlled = fact_survival(facts, window, coincidental=conversation.coincidental_answers)
    assert controlled == {"retries": "gone"}


def test_an_answer_only_the_fact_gives_still_counts_as_transformed():
    (conversation,) = parse_inline(
        LOGS.replace('answer: "15"', 'answer: "fifteen"').replace("is 15.", "is fifteen.")
    )
    assert conversation.coincidental_answers == {"retries": frozenset()}
    summary = user("Summary: retries are capped at fifteen.")
    window = Window(messages=[conversation.messages[0], summary, PROBE])
    controlled = fact_survival(
        conversation.facts, window, coincidental=conversation.coincidental_answers
    )
    assert controlled == {"retries": "transformed"}


def test_the_control_is_computed_once_per_conversation():
    (conversation,) = parse_inline(LOGS)
    assert conversation.coincidental_answers is conversation.coincidental_answers


def test_a_stored_answer_is_held_to_the_same_rules():
    fact = Fact("n", "needle", "The retry limit is 15.", answers=("15",))
    assert state(fact, user("Hello."), retrievable=["Sent 150 requests."]) == "gone"
    assert state(fact, user("Hello."), retrievable=["limit: 15"]) == "in_store"
    ignored = {"n": {"15"}}
    window = Window(messages=[user("Hello."), PROBE], retrievable=["limit: 15"])
    assert fact_survival([fact], window, coincidental=ignored) == {"n": "gone"}


# -- probes of one session share the judging, never a stale one --------------------------------


def test_each_window_is_judged_by_what_it_shows_now() -> None:
    shown = user("Config: STAGING_PORT = 5433 for now.")
    other = user("Nothing about ports here.")
    assert state(PORT, shown) == "verbatim"
    assert state(PORT, shown) == "verbatim"  # the next probe of the same session
    assert state(PORT, other) == "gone"
    shown["content"] = "Config: the port moved."  # the same message object, edited in place
    assert state(PORT, shown) == "gone"
    assert state(PORT, user("Staging listens on 5433.")) == "transformed"
    assert state(PORT, other, retrievable=["STAGING_PORT = 5433"]) == "in_store"
    # The same text with other coincidental answers is judged again.
    window = Window(messages=[user("Staging listens on 5433."), PROBE])
    assert fact_survival([PORT], window, coincidental={"port": {"5433"}})["port"] == "gone"


def test_probes_asked_strategy_by_strategy_or_probe_by_probe_judge_each_window_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_ctxeval.evaluate import survival

    judged: list[str] = []
    real = survival._state

    def counting(fact, seen, coincidental):  # type: ignore[no-untyped-def]
        judged.append(seen.visible)
        return real(fact, seen, coincidental)

    monkeypatch.setattr(survival, "_state", counting)
    # Eight strategies' windows of one session, each probe asked under all of
    # them in turn (xdist runs a scenario's items in collection order).
    shown = [user(f"Strategy {n}: STAGING_PORT = 5433.") for n in range(8)]
    windows = [Window(messages=[message, PROBE]) for message in shown]
    for _probe in range(5):
        for window in windows:
            assert fact_survival([PORT], window)["port"] == "verbatim"
    assert len(judged) == 8
