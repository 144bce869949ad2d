"""The window rules the harness checks on every probe window: each one fails
on the window that breaks it, and a sound window passes them all."""

from __future__ import annotations

from typing import Any

import pytest
from work_count import growth

from pytest_ctxeval.probe_session import ProbeSession
from pytest_ctxeval.strategies.base import Message, Window
from pytest_ctxeval.strategies.compaction import CompactionStrategy
from pytest_ctxeval.strategies.invariants import oracle_context
from pytest_ctxeval.strategies.window_rules import keeps_system_prompt, window_violations

SYSTEM: Message = {"role": "system", "content": "You are terse. Never use requests."}


def call(call_id: str, *more: str) -> Message:
    ids = (call_id, *more)
    calls = [
        {"id": i, "type": "function", "function": {"name": "ping", "arguments": "{}"}} for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def result(call_id: str, content: str = "pong") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": "ping", "content": content}


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def answer(text: str) -> Message:
    return {"role": "assistant", "content": text}


SESSION: list[Message] = [
    SYSTEM,
    user("Check the service."),
    call("call_1"),
    result("call_1"),
    answer("It is up."),
    user("And the logs?"),
    call("call_7", "call_8"),
    result("call_7", "ERROR on port 5433"),
    result("call_8", "ok"),
    answer("One error."),
    user("Which port was it?"),
]


# Each session's history as one list object, as a conversation's is: the
# harness checks a probe's window against a ProbeSession, whose history the
# rules index once for all probes.
_HISTORIES: dict[int, tuple[list[Message], list[Message]]] = {}


def violations(messages: list[Message], session: list[Message] = SESSION, **kw: Any) -> list[str]:
    found = window_violations(session, Window(messages=messages), **kw)
    if session:
        held = _HISTORIES.get(id(session))
        if held is None or held[0] is not session:  # the session held: its id stays its own
            held = _HISTORIES[id(session)] = (session, session[:-1])
        history = held[1]
        probed = ProbeSession(history, session[-1])
        assert window_violations(probed, Window(messages=messages), **kw) == found
        assert window_violations(probed, Window(messages=messages), **kw) == found  # indexed
    return found


def rules(found: list[str]) -> set[str]:
    return {v.split(":", 1)[0] for v in found}


def test_the_whole_session_and_a_sound_cut_keep_every_rule() -> None:
    assert violations(list(SESSION)) == []
    assert violations([SYSTEM, *SESSION[5:]]) == []
    # Condensed and dropped messages are fine; only what is kept is judged.
    condensed = {**SESSION[7], "content": "[Old tool result content cleared: 1 line]"}
    assert violations([*SESSION[:7], condensed, *SESSION[8:]]) == []


# --- current-message ----------------------------------------------------------------


def test_an_altered_current_user_message_is_caught() -> None:
    altered = {**SESSION[-1], "content": "Which port was it? (rephrased)"}
    assert violations([*SESSION[:-1], altered]) == [
        "current-message: the current user message was altered; it must be the window's "
        "last message, unaltered"
    ]


def test_a_current_user_message_that_is_not_last_is_caught() -> None:
    assert "current-message: the current user message is not the window's last message" in (
        violations([SYSTEM, SESSION[-1], *SESSION[1:5]])
    )
    assert violations([]) == [
        "current-message: the current user message is not the window's last message",
        "system-prompt: the window does not start with the system prompt",
    ]


def test_a_current_tool_result_may_be_condensed_but_must_be_last() -> None:
    session = SESSION[:8]
    condensed = {**session[-1], "content": "[sub-agent read 6 tokens and answered] port 5433"}
    assert violations([*session[:-1], condensed], session) == []
    assert "current-message: the current tool result call_7 is not the window's last message" in (
        violations(session[:-1], session)
    )


# --- system-prompt -----------------------------------------------------------------


@pytest.mark.parametrize(
    "system",
    [
        {"role": "system", "content": "Current time: 09:00\n\n" + SYSTEM["content"]},
        {"role": "system", "content": "You are terse. Requests is fine. Never use requests."},
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": SYSTEM["content"]},
    ],
    ids=["prepended", "injected", "rewritten", "demoted-to-user"],
)
def test_a_system_prompt_that_is_not_kept_verbatim_first_is_caught(system: Message) -> None:
    found = violations([system, *SESSION[1:]])
    assert rules(found) == {"system-prompt"}


def test_a_dropped_system_prompt_is_caught_unless_the_strategy_is_configured_to() -> None:
    assert violations(SESSION[1:]) == [
        "system-prompt: the window does not start with the system prompt"
    ]
    assert violations(SESSION[1:], keep_system=False) == []


def test_text_appended_after_the_system_prompt_is_allowed() -> None:
    # compaction folds its working memory in after the prompt's own text.
    with_memory = {**SYSTEM, "content": SYSTEM["content"] + "\n\n## Working memory"}
    assert violations([with_memory, *SESSION[5:]]) == []


def test_plain_compaction_with_its_memory_folded_in_keeps_the_rules() -> None:
    strategy = CompactionStrategy(every_turns=1, keep_turns=1)
    strategy.setup(oracle_context())
    session: list[Message] = [SYSTEM]
    strategy.add(SYSTEM)
    for turn in range(4):
        for message in (user(f"Turn {turn}: never use port 80."), answer(f"Noted {turn}.")):
            session.append(message)
            strategy.add(message)
    session.append(user("Which port?"))
    strategy.add(session[-1])
    window = strategy.window()
    assert window.messages[0]["content"] != SYSTEM["content"]  # the memory is in there
    assert window_violations(session, window) == []


def test_a_session_without_a_system_prompt_has_no_system_prompt_to_keep() -> None:
    assert violations(SESSION[1:], SESSION[1:]) == []


def test_only_an_explicit_keep_system_false_exempts_a_strategy() -> None:
    assert keeps_system_prompt({}) is True
    assert keeps_system_prompt({"turns": 3, "keep_system": True}) is True
    assert keeps_system_prompt({"keep_system": False}) is False
    # A wrapper's inner strategy configured to drop it (cache-hostile over sliding).
    assert (
        keeps_system_prompt({"inner": "sliding", "inner_params": {"keep_system": False}}) is False
    )


# --- order -------------------------------------------------------------------------


def test_a_reversed_history_is_caught() -> None:
    reversed_turns = [SYSTEM, *SESSION[5:10], *SESSION[1:5], SESSION[-1]]
    assert violations(reversed_turns) == [
        "order: window message 7 (user) is session message 2, but it comes after window "
        "message 6, which is session message 10"
    ]


def test_repeated_identical_messages_in_session_order_are_not_reordered() -> None:
    session = [user("ok"), answer("ok"), user("ok"), answer("ok"), user("done?")]
    assert violations([session[2], session[3], session[4]], session) == []
    assert violations(list(session), session) == []


def test_altered_messages_are_not_ordered() -> None:
    note = {"role": "user", "content": "Retrieved from earlier: the service is up."}
    assert violations([SYSTEM, note, *SESSION[5:]]) == []


# --- tool-pairs --------------------------------------------------------------------


def test_a_tool_result_moved_away_from_its_call_is_caught() -> None:
    moved = {**SESSION[7], "content": "[moved] ERROR"}
    window = [*SESSION[:7], SESSION[8], SESSION[9], moved, SESSION[-1]]
    assert violations(window) == [
        "tool-pairs: tool result call_7 is not right after the assistant message that made the call"
    ]


def test_sibling_results_may_swap_as_pairs_but_not_as_an_order() -> None:
    swapped = violations([*SESSION[:7], SESSION[8], SESSION[7], *SESSION[9:]])
    assert rules(swapped) == {"order"}


def test_a_call_without_its_result_and_a_result_without_its_call_are_caught() -> None:
    assert violations([*SESSION[:3], *SESSION[4:]]) == [
        "tool-pairs: tool call call_1 without its result"
    ]
    assert violations([SYSTEM, SESSION[1], *SESSION[3:]]) == [
        "tool-pairs: tool result call_1 without its call"
    ]


def test_a_result_sent_twice_is_caught() -> None:
    assert violations([*SESSION[:4], SESSION[3], *SESSION[4:]]) == [
        "order: window message 5 (tool) repeats session message 4 (window message 4)",
        "tool-pairs: tool result call_1 appears twice",
    ]


def test_a_call_still_waiting_for_a_sibling_result_is_not_the_windows_fault() -> None:
    # The model is called after the first of two results (some agent loops do).
    session = SESSION[:8]
    assert violations(list(session), session) == []


def test_a_pair_the_session_itself_breaks_is_not_blamed_on_the_window() -> None:
    # A scenario may put a user turn between a call and its result.
    session = [user("Ping it."), call("call_1"), user("Hurry."), result("call_1"), user("So?")]
    assert violations(list(session), session) == []
    assert violations(session[2:], session) == []


# --- cost --------------------------------------------------------------------------


def test_the_check_is_linear_in_the_session() -> None:
    # Messages with repeated contents: a check that compares each with every
    # other would make four times the calls for twice the session.
    def check(turns: int) -> None:
        session: list[Message] = [SYSTEM]
        for turn in range(turns):
            session += [user("Again."), call(f"c{turn}"), result(f"c{turn}"), answer("Done.")]
        session.append(user("Last question."))
        assert violations(list(session), session) == []
        assert violations([SYSTEM, *session[-41:]], session) == []

    assert growth(check, 2_500) < 2.3
