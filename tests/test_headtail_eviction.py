"""headtail over a token budget: whole middle turns go to the memory store, and
the tool definition can stay byte-identical on every request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import by_key, twin_windows

from pytest_ctxeval.strategies.base import Message, approximate_tokens, messages_tokens
from pytest_ctxeval.strategies.headtail import INDEX_INTRO, HeadTailStrategy

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def chat(turns: int) -> list[Message]:
    """Short messages only: nothing for headtail to cut inside a message."""
    messages: list[Message] = [SYSTEM]
    for turn in range(1, turns + 1):
        messages.append(
            {"role": "user", "content": f"Turn {turn}: the code for turn {turn} is c{turn * 7}."}
        )
        messages.append({"role": "assistant", "content": f"Noted turn {turn}."})
    return messages


def tool_turn(turn: int, output: str) -> list[Message]:
    call_id = f"call_{turn}"
    return [
        {"role": "user", "content": f"Turn {turn}: read the config."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"turn": turn})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": output},
        {"role": "assistant", "content": f"Read it at turn {turn}."},
    ]


def windows(strategy: HeadTailStrategy, messages: list[Message]) -> list[Any]:
    """The window at every point where an agent calls the model."""
    shown = []
    for message in messages:
        strategy.add(message)
        if message["role"] in ("user", "tool"):
            shown.append(strategy.window())
    return shown


def test_without_a_budget_short_messages_grow_like_full() -> None:
    (*_, last) = windows(HeadTailStrategy(), chat(30))
    assert len(last.messages) == 60 and last.tools == []


def listing_text(window: Any) -> str:
    """Where the window lists its memories: the index message, else the tool."""
    index = [m["content"] for m in window.messages if m["content"].startswith(INDEX_INTRO)]
    return index[0] if index else window.tools[0]["function"]["description"]


@pytest.mark.parametrize("listing", ["message", "tool"])
def test_over_a_budget_whole_middle_turns_go_to_the_store(listing: str) -> None:
    strategy = HeadTailStrategy(budget_tokens=300, listing=listing)
    session = [*chat(30), {"role": "user", "content": "What was the code for turn 2?"}]
    every = windows(strategy, session)
    for window in every:
        assert messages_tokens(window.messages, approximate_tokens) <= 300
    last = every[-1]
    contents = [m["content"] for m in last.messages if not m["content"].startswith(INDEX_INTRO)]
    # The head (the first turn) and the latest turns stay; turn 2 is in memory.
    assert contents[:3] == [SYSTEM["content"], session[1]["content"], session[2]["content"]]
    assert contents[-3:] == [session[-3]["content"], session[-2]["content"], session[-1]["content"]]
    assert not any("turn 2 is" in text for text in contents)
    entries = strategy.store.entries()
    assert [e.message_count for e in entries] == [2] * len(entries)
    assert entries[0].position == 4  # turn 2's user message is message 4
    assert strategy.tool_handler("retrieve_memory", {"id": entries[0].id}) == (
        "[user] Turn 2: the code for turn 2 is c14.\n[assistant] Noted turn 2."
    )
    listed = listing_text(last)
    # The newest memory is listed; in the tool the oldest too (the index message
    # gets only the room the kept turns leave).
    newest = entries[-1]
    assert f"id={newest.id} | position {newest.position} | messages 2 | preview:" in listed
    if listing == "tool":
        assert f"id={entries[0].id} | position 4 | messages 2 | preview:" in listed
    assert any("c14" in text for text in last.retrievable)


def test_the_memory_index_does_not_push_the_turns_out() -> None:
    # Each evicted short turn adds a listing line about as long as itself: were
    # the whole listing counted, every turn would go to the store for it.
    session = [*chat(30), {"role": "user", "content": "What was the code for turn 2?"}]
    full = messages_tokens(session, approximate_tokens)
    budget = full - 80  # a few turns too many
    by_listing = {}
    for listing in ("message", "tool"):
        strategy = HeadTailStrategy(budget_tokens=budget, listing=listing)
        last = windows(strategy, session)[-1]
        assert messages_tokens(last.messages, approximate_tokens) <= budget
        by_listing[listing] = len(strategy.store.entries())
    assert 0 < by_listing["tool"] <= by_listing["message"] <= by_listing["tool"] + 3


def test_an_evicted_turn_keeps_its_tool_call_and_result_together() -> None:
    session = [SYSTEM, *tool_turn(1, "first"), *tool_turn(2, "ROTATION_KEY = rk-5521")]
    for turn in range(3, 12):
        session += tool_turn(turn, f"plain output {turn}")
    strategy = HeadTailStrategy(budget_tokens=250)
    every = windows(strategy, [*session, {"role": "user", "content": "What is ROTATION_KEY?"}])
    last = every[-1]
    assert "rk-5521" not in json.dumps(last.messages)
    (stored,) = [e for e in strategy.store.entries() if "rk-5521" in e.text]
    assert stored.message_count == 4  # user, call, result, reply: one whole turn
    assert "[assistant calls] read_file" in stored.text
    assert any("rk-5521" in text for text in last.retrievable)


@pytest.mark.parametrize("listing", ["message", "tool"])
def test_eviction_stores_each_turn_once(listing: str) -> None:
    strategy = HeadTailStrategy(budget_tokens=300, listing=listing)
    windows(strategy, chat(30))
    # After the last reply the window may evict once more; asking again must not.
    first = strategy.window()
    stored = [e.text for e in strategy.store.entries()]
    second = strategy.window()
    assert [e.text for e in strategy.store.entries()] == stored
    assert len(stored) == len(set(stored))
    assert first.messages == second.messages


def test_the_head_goes_too_when_the_current_exchange_leaves_no_room() -> None:
    strategy = HeadTailStrategy(budget_tokens=60, head_turns=2)
    (*_, last) = windows(strategy, [*chat(6), {"role": "user", "content": "x " * 100}])
    assert [m["role"] for m in last.messages] == ["system", "user"]


def test_with_the_listing_as_a_message_the_tool_definition_never_changes() -> None:
    strategy = HeadTailStrategy(budget_tokens=300, listing="message")
    every = windows(strategy, [*chat(30), {"role": "user", "content": "And now?"}])
    offered = [json.dumps(w.tools, sort_keys=True) for w in every if w.tools]
    assert len(offered) > 10 and len(set(offered)) == 1
    assert "id=m" not in offered[0]  # no listing in the definition
    last = every[-1]
    index = last.messages[-2]
    assert index["role"] == "user" and index["content"].startswith(INDEX_INTRO)
    # The newest memories are listed (as many as the budget leaves room for).
    assert f"id={strategy.store.entries()[-1].id} |" in index["content"]
    assert last.messages[-1] == {"role": "user", "content": "And now?"}


def test_the_listing_message_goes_before_a_current_tool_exchange() -> None:
    strategy = HeadTailStrategy(head=5, tail=5, listing="message")
    session = [SYSTEM, *tool_turn(1, "x" * 200), *tool_turn(2, "y" * 200)[:3]]
    window = windows(strategy, session)[-1]
    roles = [m["role"] for m in window.messages]
    assert roles[-3:] == ["user", "assistant", "tool"]
    assert window.messages[-3]["content"].startswith(INDEX_INTRO)


# --- end to end -----------------------------------------------------------------------

SCENARIO = """
    id: long-chat
    system: You are a helpful assistant.
    turns:
      - user: "Remember this: the vault code is 7391."
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 30, seed: 3}
    needles:
      - id: locker
        turn: 6
        text: "My gym locker number is 4417."
        question: What is my gym locker number?
        answer: "4417"
    probes:
      - {id: locker, needle: locker}
"""


def test_a_budgeted_headtail_reports_an_evicted_fact_as_in_store(ctx) -> None:
    ctx.scenario("long-chat", SCENARIO)
    # Five memories listed: the turn with the needle is no longer previewed.
    result = ctx.run("--ctx-strategy=headtail(budget_tokens=400,max_listed=5),headtail")
    assert result.ret in (0, 1), result.stdout.str()
    records = by_key(ctx.results())
    budgeted = records[("long-chat", "headtail[max_listed:5+budget_tokens:400]", "locker")]
    plain = records[("long-chat", "headtail", "locker")]
    assert budgeted["fact_survival"] == {"locker": "in_store"}
    assert plain["fact_survival"] == {"locker": "verbatim"}
    assert budgeted["peak_prompt_tokens"] < plain["peak_prompt_tokens"]


@pytest.mark.parametrize(
    "params",
    [{}, {"budget_tokens": 1200}, {"listing": "tool"}, {"head": 40, "tail": 40}],
    ids=["default", "budget", "listing-in-tool", "short-head-tail"],
)
def test_a_window_built_on_the_previous_one_is_the_window_built_afresh(
    params: dict[str, Any],
) -> None:
    # Each window extends the previous one when only new messages arrived; a
    # twin that rebuilds every window from the whole history must see the
    # same, through repeated calls and messages (hygiene), evictions, a
    # pipeline's revision and new chats.
    from pytest_ctxeval.strategies.invariant_sessions import multi_chat_session, tool_session

    again = tool_turn(8, "the file, read again " * 30)
    again[1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"turn": 7})  # same call
    repeated = [
        *tool_session(6),
        *tool_turn(7, "the file " * 30),
        *again,  # leaves the earlier call and its result out of the window
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You are welcome."},
        {"role": "user", "content": "Thanks."},
    ]
    multi = multi_chat_session()
    sessions = [(repeated, ()), (multi.messages, multi.chat_starts)]

    def forget(strategy: HeadTailStrategy) -> None:
        strategy._built = None

    for index, mine, theirs in twin_windows(
        lambda: HeadTailStrategy(**params), forget, sessions, revise_at=12
    ):
        assert mine.messages == theirs.messages, f"message {index}"
        assert mine.tools == theirs.tools and mine.retrievable == theirs.retrievable
