"""What each built-in strategy puts in the window, on a small hand-made session."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ctxeval.strategies.base import BaseStrategy, ContextStrategy, Message
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import (
    INDEX_INTRO,
    STABLE_TOOL_INTRO,
    HeadTailStrategy,
    retrieve_tool,
)
from pytest_ctxeval.strategies.memory_store import MemoryEntry, MemoryStore, make_preview
from pytest_ctxeval.strategies.registry import (
    StrategyNameClashError,
    UnknownStrategyError,
    resolve,
)
from pytest_ctxeval.strategies.sliding import SlidingStrategy
from pytest_ctxeval.strategies.truncate import TruncateStrategy

SYSTEM = (
    "You are an assistant that analyses traces. Never use the requests library; "
    "always use urllib3. Answer briefly and name the inputs you talk about. " * 2
)
INPUTS = ["reset password", "refund status", "cancel order", "change address", "track parcel"]
SECRET_ROW = "SPECIAL_API_KEY = 'secret-9981'"
ARGS = json.dumps({"day": "yesterday"})


def json_dump(rows: int, planted_at: int | None = None) -> str:
    """A long, repetitive JSON array, optionally with one odd row."""
    lines = []
    for i in range(rows):
        text = SECRET_ROW if i == planted_at else INPUTS[i % len(INPUTS)]
        lines.append(json.dumps({"row": i, "input": text, "count": 400 - i}) + ",")
    return "[\n" + "\n".join(lines) + "\n]"


def tool_call(call_id: str, name: str = "query_spans", arguments: str = ARGS) -> Message:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def tool_result(call_id: str, content: str, name: str = "query_spans") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


FIRST_DUMP = json_dump(60, planted_at=31)
SECOND_DUMP = json_dump(80, planted_at=47)
CURRENT = "Tell me more about input B. " + "Please be thorough. " * 12

SESSION: list[Message] = [
    {"role": "system", "content": SYSTEM},  # 0
    {"role": "user", "content": "What are the most common inputs in yesterday's traces?"},  # 1
    tool_call("call_1"),  # 2
    tool_result("call_1", FIRST_DUMP),  # 3
    {"role": "assistant", "content": "Top inputs: A) 'reset password', B) 'refund status'."},
    {"role": "user", "content": "Thanks. Anything unusual?"},  # 5
    {"role": "assistant", "content": "Nothing unusual."},  # 6
    {"role": "user", "content": "Run the same query again, please."},  # 7
    tool_call("call_2"),  # 8
    tool_result("call_2", SECOND_DUMP),  # 9
    {"role": "assistant", "content": "Same top inputs as before."},  # 10
    {"role": "user", "content": CURRENT},  # 11: the current message
]


def fed(strategy: BaseStrategy, messages: list[Message] = SESSION) -> BaseStrategy:
    for message in copy.deepcopy(messages):
        strategy.add(message)
    return strategy


def assert_tool_pairs_intact(messages: list[Message]) -> None:
    """Every tool call has its result in the window, and every result its call."""
    called: set[str] = set()
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    for message in messages:
        for call in message.get("tool_calls") or []:
            assert call["id"] in answered, f"tool call {call['id']} without its result"
            called.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in called, f"orphan result {message['tool_call_id']}"


def call_points(session: list[Message] = SESSION) -> list[int]:
    """Prefix lengths at which the agent calls the model: after a user message or a result."""
    ends = range(1, len(session) + 1)
    return [end for end in ends if session[end - 1]["role"] in ("user", "tool")]


def conversation_chars(messages: list[Message]) -> int:
    return sum(len(m.get("content") or "") for m in messages if m["role"] != "system")


# --- full -------------------------------------------------------------------


def test_full_returns_every_message_in_order() -> None:
    window = fed(FullStrategy()).window()
    assert window.messages == SESSION
    assert window.tools == [] and window.tool_handler is None


# --- truncate ---------------------------------------------------------------


def test_truncate_keeps_the_start_cuts_at_the_limit_and_appends_the_current_message() -> None:
    max_chars = len(SESSION[1]["content"]) + 500  # the limit falls inside the first dump
    messages = fed(TruncateStrategy(max_chars=max_chars)).window().messages

    assert messages[0] == SESSION[0]
    assert messages[1:3] == SESSION[1:3]  # the question and the call, whole
    assert messages[3]["content"] == FIRST_DUMP[:500]  # the result, cut to fit
    assert messages[4] == SESSION[-1]  # everything after the cut is gone...
    assert len(messages) == 5  # ...but the current message is there, unaltered
    assert conversation_chars(messages[:-1]) == max_chars


def test_truncate_does_not_count_the_system_prompt() -> None:
    question = SESSION[1]["content"]
    messages = fed(TruncateStrategy(max_chars=len(question))).window().messages
    assert [m["content"] for m in messages[:2]] == [SYSTEM, question]


def test_truncate_drops_a_call_whose_result_did_not_fit() -> None:
    # Room for the question only: the empty call message fits, its result does not.
    messages = fed(TruncateStrategy(max_chars=len(SESSION[1]["content"]))).window().messages
    assert messages == [SESSION[0], SESSION[1], SESSION[-1]]


def test_truncate_keeps_the_call_of_a_current_tool_result() -> None:
    messages = fed(TruncateStrategy(max_chars=0), SESSION[:4]).window().messages
    assert messages == [SESSION[0], SESSION[2], SESSION[3]]


@pytest.mark.parametrize("max_chars", [0, 10, 54, 55, 300, 1500, 4000, 10_000])
def test_truncate_never_separates_tool_calls_from_results(max_chars: int) -> None:
    for end in call_points():
        messages = fed(TruncateStrategy(max_chars=max_chars), SESSION[:end]).window().messages
        assert messages[-1] == SESSION[end - 1]
        assert_tool_pairs_intact(messages)


# --- sliding ----------------------------------------------------------------


def test_sliding_keeps_the_system_prompt_and_the_last_k_turns() -> None:
    messages = fed(SlidingStrategy(turns=2)).window().messages
    # The last two turns start at "Run the same query again" (index 7).
    assert messages == [SESSION[0], *SESSION[7:]]


@pytest.mark.parametrize("turns", [1, 2, 3, 4])
def test_sliding_turns_start_on_a_user_message(turns: int) -> None:
    messages = fed(SlidingStrategy(turns=turns)).window().messages
    assert messages[0] == SESSION[0]
    assert messages[1]["role"] == "user"
    assert sum(m["role"] == "user" for m in messages) == turns
    assert messages[-1] == SESSION[-1]


def test_sliding_with_more_turns_than_the_session_keeps_everything() -> None:
    assert fed(SlidingStrategy(turns=50)).window().messages == SESSION


def test_sliding_can_drop_the_system_prompt() -> None:
    messages = fed(SlidingStrategy(turns=1, keep_system=False)).window().messages
    assert messages == [SESSION[-1]]


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_sliding_never_separates_tool_calls_from_results(turns: int) -> None:
    for end in call_points():
        messages = fed(SlidingStrategy(turns=turns), SESSION[:end]).window().messages
        assert messages[-1] == SESSION[end - 1]
        assert_tool_pairs_intact(messages)


def test_sliding_rejects_zero_turns() -> None:
    with pytest.raises(ValueError, match="turns must be >= 1, got 0"):
        SlidingStrategy(turns=0)


# --- headtail ---------------------------------------------------------------

MARKER = re.compile(
    r"\n\[… (\d+) chars stored as memory (m\d+); call retrieve_memory\(id=\"\2\"\) …\]\n"
)


def without_index(messages: list[Message]) -> list[Message]:
    """The window's messages but headtail's memory index, which must sit just
    before the current exchange (here: the current message)."""
    index = [i for i, m in enumerate(messages) if str(m.get("content")).startswith(INDEX_INTRO)]
    assert index == [len(messages) - 2], "one memory index, just before the current message"
    assert messages[index[0]]["role"] == "user"
    return [m for i, m in enumerate(messages) if i not in index]


# SESSION with the second query asked for another day: no repeated call to clean up.
DISTINCT = [*SESSION[:8], tool_call("call_2", arguments='{"day": "today"}'), *SESSION[9:]]


def test_headtail_keeps_head_and_tail_and_marks_the_stored_middle() -> None:
    window = fed(HeadTailStrategy(head=100, tail=100)).window()
    (content,) = [m["content"] for m in window.messages if m.get("tool_call_id") == "call_2"]
    middle = SECOND_DUMP[100:-100]
    assert content == (
        SECOND_DUMP[:100]
        + f'\n[… {len(middle)} chars stored as memory m1; call retrieve_memory(id="m1") …]\n'
        + SECOND_DUMP[-100:]
    )
    assert MARKER.search(content)
    assert window.retrievable == [SECOND_DUMP]


def test_headtail_never_touches_the_system_prompt_or_the_current_message() -> None:
    assert len(SYSTEM) > 200 and len(CURRENT) > 200
    messages = without_index(fed(HeadTailStrategy(head=50, tail=50), DISTINCT).window().messages)
    assert messages[0] == DISTINCT[0]
    assert messages[-1] == DISTINCT[-1]
    # Only the two dumps change; short messages are untouched and pairs stay intact.
    changed = [i for i, (m, s) in enumerate(zip(messages, DISTINCT, strict=True)) if m != s]
    assert changed == [3, 9]
    assert_tool_pairs_intact(messages)


def test_headtail_tool_returns_the_middle_byte_for_byte() -> None:
    strategy = fed(HeadTailStrategy(head=100, tail=100))
    window = strategy.window()
    assert window.tool_handler is not None
    assert window.tool_handler("retrieve_memory", {"id": "m1"}) == SECOND_DUMP[100:-100]


def test_headtail_tool_errors_name_the_known_ids() -> None:
    handler = fed(HeadTailStrategy()).window().tool_handler
    assert handler is not None
    for reply in (handler("retrieve_memory", {"id": "m7"}), handler("search", {"id": "m1"})):
        assert reply.startswith("error: ") and "m1" in reply


def test_headtail_lists_each_memory_in_the_exact_format_in_the_tool_description() -> None:
    window = fed(HeadTailStrategy(head=100, tail=100, listing="tool")).window()
    preview = make_preview(SECOND_DUMP[100:-100])
    assert window.tools == [
        {
            "type": "function",
            "function": {
                "name": "retrieve_memory",
                "description": "Retrieve text that was moved out of the conversation into memory."
                " Stored memories:"
                f"\nid=m1 | position 10 | messages 1 | preview: {preview}",
                "parameters": {
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": "memory id, e.g. m1"}},
                    "required": ["id"],
                },
            },
        }
    ]
    assert not any(str(m.get("content")).startswith(INDEX_INTRO) for m in window.messages)


def test_headtail_lists_each_memory_in_the_exact_format_in_an_index_message() -> None:
    window = fed(HeadTailStrategy(head=100, tail=100)).window()
    preview = make_preview(SECOND_DUMP[100:-100])
    assert window.messages[-2] == {
        "role": "user",
        "content": "Memory index (call retrieve_memory with an id to read one):"
        f"\nid=m1 | position 10 | messages 1 | preview: {preview}",
    }
    assert window.messages[-1] == SESSION[-1]
    assert window.tools == [
        {
            "type": "function",
            "function": {
                "name": "retrieve_memory",
                "description": "Retrieve text that was moved out of the conversation into memory,"
                ' by its id (m1, m2, …). The latest "Memory index" message lists the stored'
                " memories.",
                "parameters": {
                    "type": "object",
                    "properties": {"id": {"type": "string", "description": "memory id, e.g. m1"}},
                    "required": ["id"],
                },
            },
        }
    ]


def test_headtail_drops_the_earlier_call_and_result_of_a_repeated_tool_call() -> None:
    messages = fed(HeadTailStrategy()).window().messages
    # The first query_spans call and its result are gone; the newest pair stays.
    assert messages == [SESSION[0], SESSION[1], *messages[2:]]
    assert messages[2:4] == SESSION[4:6]
    assert [m.get("tool_call_id") for m in messages if m["role"] == "tool"] == ["call_2"]
    assert [c["id"] for m in messages for c in m.get("tool_calls") or []] == ["call_2"]
    assert_tool_pairs_intact(messages)


def test_headtail_a_repeated_call_in_one_message_with_another_keeps_the_other() -> None:
    both = {
        **tool_call("call_1"),
        "tool_calls": [
            tool_call("call_1")["tool_calls"][0],
            tool_call("call_x", name="read_file", arguments="{}")["tool_calls"][0],
        ],
    }
    session = [
        *SESSION[:2],
        both,
        tool_result("call_1", "old rows"),
        tool_result("call_x", "file text", name="read_file"),
        *SESSION[4:],
    ]
    messages = fed(HeadTailStrategy(), session).window().messages
    assert messages[2]["tool_calls"] == [both["tool_calls"][1]]
    assert messages[3]["tool_call_id"] == "call_x"
    assert "old rows" not in json.dumps(messages)
    assert_tool_pairs_intact(messages)


def test_headtail_calls_with_reordered_json_arguments_are_one_call() -> None:
    reordered = tool_call("call_2", arguments='{ "day" : "yesterday" }')
    session = [*SESSION[:8], reordered, *SESSION[9:]]
    messages = fed(HeadTailStrategy(), session).window().messages
    assert [m.get("tool_call_id") for m in messages if m["role"] == "tool"] == ["call_2"]


def test_headtail_keeps_results_of_calls_with_different_arguments() -> None:
    messages = fed(HeadTailStrategy(), DISTINCT).window().messages
    assert MARKER.search(messages[3]["content"])
    assert [m.get("tool_call_id") for m in messages if m["role"] == "tool"] == [
        "call_1",
        "call_2",
    ]


def test_headtail_leaves_out_a_repeated_message_but_never_the_current_one() -> None:
    again = {"role": "assistant", "content": "Nothing unusual."}
    session = [*DISTINCT[:7], again, *DISTINCT[7:]]
    messages = without_index(fed(HeadTailStrategy(), session).window().messages)
    assert [m["content"] for m in messages].count("Nothing unusual.") == 1
    assert len(messages) == len(DISTINCT)
    # The current message goes in even when it repeats an earlier one.
    repeated = [*DISTINCT, {"role": "assistant", "content": "ok"}, DISTINCT[5]]
    shown = without_index(fed(HeadTailStrategy(), repeated).window().messages)
    assert shown[-1] == DISTINCT[5] and shown[5] == DISTINCT[5]


def test_headtail_offers_no_tool_while_nothing_is_stored() -> None:
    window = fed(HeadTailStrategy(), SESSION[:2]).window()
    assert window.messages == SESSION[:2]
    assert window.tools == [] and window.tool_handler is None and window.retrievable == []


def test_headtail_window_twice_is_the_same_and_stores_nothing_twice() -> None:
    strategy = fed(HeadTailStrategy())
    first, second = strategy.window(), strategy.window()
    assert first.messages == second.messages and first.tools == second.tools
    assert [e.id for e in strategy.store.entries()] == ["m1"]


def test_headtail_fork_has_its_own_memory() -> None:
    original = fed(HeadTailStrategy())
    before = original.window()
    fork = original.fork()
    assert isinstance(fork, HeadTailStrategy)
    fork.add({"role": "user", "content": "x" * 500})
    fork.add({"role": "assistant", "content": "ok"})
    fork.add({"role": "user", "content": "And now?"})
    fork.window()
    # m2: the earlier question (no longer current), m3: the 500 x's.
    assert [e.id for e in fork.store.entries()] == ["m1", "m2", "m3"]
    assert [e.id for e in original.store.entries()] == ["m1"]
    after = original.window()
    assert after.messages == before.messages and after.tools == before.tools


def test_rag_fork_indexes_on_its_own() -> None:
    from pytest_ctxeval.strategies.rag import RagStrategy

    original = RagStrategy(keep_turns=1, k=1)
    for turn in range(4):
        original.add({"role": "user", "content": f"Turn {turn}: the port is {5000 + turn}."})
        original.add({"role": "assistant", "content": "Noted."})
    original.add({"role": "user", "content": "Which port?"})
    before = original.window()

    def postings() -> dict[str, tuple[object, ...]]:
        """Each term's documents, and what bounds its score."""
        return {
            term: (list(p.docs), list(p.tfs), p.max_tf, p.min_length)
            for term, p in original.index.postings.items()
        }

    indexed = (list(original.index.lengths), postings(), list(original.chunks))
    fork = original.fork()
    fork.add({"role": "assistant", "content": "Port 5003."})
    fork.add({"role": "user", "content": "Port 9999 is the backup port."})
    fork.add({"role": "assistant", "content": "Noted."})
    fork.add({"role": "user", "content": "Which backup port?"})
    fork.window()
    assert len(fork.index.lengths) > len(indexed[0]) and len(fork.chunks) > len(indexed[2])
    assert list(original.index.lengths) == indexed[0] and original.chunks == indexed[2]
    assert postings() == indexed[1]
    after = original.window()
    assert after.messages == before.messages


# --- memory store and previews ----------------------------------------------


def test_memory_store_assigns_sequential_ids_and_copies_independently() -> None:
    store = MemoryStore()
    first = store.put(position=4, text="middle one", original="head middle one tail")
    second = store.put(position=9, text="middle two", original="whole two", message_count=3)
    assert (first.id, second.id) == ("m1", "m2")
    assert store.get("m2") == second and store.get("m3") is None
    assert store.entries() == [first, second]
    assert store.originals() == ["head middle one tail", "whole two"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.text = "changed"  # type: ignore[misc]

    clone = copy.deepcopy(store)
    clone.put(position=12, text="only in the clone", original="only in the clone")
    assert [e.id for e in clone.entries()] == ["m1", "m2", "m3"]
    assert store.entries() == [first, second]
    assert isinstance(clone.get("m1"), MemoryEntry)


def test_preview_shows_a_planted_line_deep_inside_a_json_dump() -> None:
    dump = json_dump(400, planted_at=250)
    preview = make_preview(dump)
    assert preview.startswith(" ".join(dump.split())[:100] + " … ")
    assert "SPECIAL_API_KEY = 'secret-9981'" in preview
    assert len(preview) < 400 and "\n" not in preview


# Two lines of common words first: the head shows them, the odd lines come after.
_COMMON = "status ok worker queue index deploy cluster shard " * 3
_ODD_LINES = [
    "Straßenbahn Zug\nalpha beta gamma\ndelta epsilon omega",  # ß is a letter: one word
    "Ärger über Öl\nÄrger über Wasser\nΣΟΦΙΑ ΟΔΟΣ λόγος\nοδος σοφια ΟΔΟΣ ηλιος",
    "\u212aelvin temperature reading\nkelvin scale\nscale \u212aelvin dial",  # Kelvin sign
    "alpha beta gamma\r\nalpha beta\x85delta epsilon zeta\u2028gamma delta theta",
    "same line twice twice\nsame line twice twice\nother words here",
    "pear plum\napple kiwi mango",  # two odd words are enough
]


@pytest.mark.parametrize(
    "text",
    [json_dump(60, planted_at=41), *(f"{_COMMON}\n{_COMMON}\n{odd}" for odd in _ODD_LINES)],
)
def test_preview_picks_the_lines_a_plain_reading_of_each_line_picks(text: str) -> None:
    """A line's rare words: those of no other line, letters only, any case."""
    lines = text.splitlines()
    words = [set(re.findall(r"[^\W\d_]{3,}", line.lower())) for line in lines]
    rare = [{w for w in ws if sum(w in other for other in words) == 1} for ws in words]
    ranked = sorted((-len(r), i) for i, r in enumerate(rare) if len(r) >= 2)[:2]
    expected = [" ".join(lines[i].split()) for _, i in sorted(ranked, key=lambda item: item[1])]
    notable = [line for line in expected if line not in " ".join(text.split())[:100]]
    preview = make_preview(text)
    assert preview.split(" … ")[1:] == notable


@pytest.mark.parametrize(
    "middle",
    [
        "short middle",
        "x" * 100,
        "x" * 90 + " " * 50,  # longer than 100 characters, not once collapsed
        "word " * 20 + "w",  # 101 characters once collapsed
        " \t" * 300 + "late start " * 30,  # the first 400 characters are whitespace
        "a" + " " * 398 + "b" + " c" * 60,
    ],
)
def test_preview_head_is_the_collapsed_text_cut_at_100_characters(middle: str) -> None:
    collapsed = " ".join(middle.split())
    expected = collapsed[:100] + (" …" if len(collapsed) > 100 else "")
    assert make_preview(middle) == expected


def test_preview_of_text_without_odd_lines_is_just_the_head() -> None:
    dump = json_dump(400)
    assert make_preview(dump) == " ".join(dump.split())[:100] + " …"


# --- registry -----------------------------------------------------------------


def test_all_resolves_to_the_built_ins_sorted() -> None:
    names = [spec.name for spec in resolve("all")]
    assert {"full", "headtail", "sliding", "truncate"} <= set(names)
    assert names == sorted(names)


def test_named_strategies_resolve_in_order_with_default_params() -> None:
    specs = resolve("headtail,sliding")
    assert [s.name for s in specs] == ["headtail", "sliding"]
    headtail, sliding = (spec.create() for spec in specs)
    assert isinstance(headtail, HeadTailStrategy) and isinstance(sliding, SlidingStrategy)
    assert headtail.params() == {"head": 100, "tail": 100, "max_listed": 40}
    assert sliding.params() == {"turns": 6, "keep_system": True}


def test_unknown_strategy_names_the_known_ones() -> None:
    with pytest.raises(UnknownStrategyError, match="'nope'") as info:
        resolve("full,nope")
    for known in ("full", "headtail", "sliding", "truncate"):
        assert known in str(info.value)


def test_module_class_names_resolve() -> None:
    (spec,) = resolve("pytest_ctxeval.strategies.full:FullStrategy")
    assert spec.name == "full"
    assert isinstance(spec.create(), FullStrategy)


@pytest.mark.parametrize(
    "strategy",
    [FullStrategy(), TruncateStrategy(max_chars=10), SlidingStrategy(turns=3), HeadTailStrategy()],
    ids=lambda s: s.name,
)
def test_every_built_in_follows_the_protocol(strategy: BaseStrategy) -> None:
    assert isinstance(strategy, ContextStrategy)
    assert strategy.description and "\n" not in strategy.description
    assert type(strategy)(**strategy.params()).params() == strategy.params()


def test_headtail_tool_definition_is_stable_between_requests_and_bounded() -> None:
    strategy = HeadTailStrategy(head=10, tail=10, max_listed=3, listing="tool")
    strategy.add({"role": "user", "content": "x" * 100})
    strategy.add({"role": "assistant", "content": "y" * 100})
    strategy.add({"role": "user", "content": "next"})
    first = strategy.window().tools
    strategy.add({"role": "assistant", "content": "short"})
    strategy.add({"role": "user", "content": "again"})
    # No new memory: the tool definition is byte-identical (prompt-cache friendly).
    assert strategy.window().tools == first
    for i in range(6):
        strategy.add({"role": "assistant", "content": f"{i}" * 100})
        strategy.add({"role": "user", "content": "more"})
    description = strategy.window().tools[0]["function"]["description"]
    assert description.count("\nid=m") == 3  # only the newest three are listed
    assert "(5 older memories, m1 to m5, are not listed" in description
    assert strategy.tool_handler("retrieve_memory", {"id": "m1"}) == "x" * 80  # still retrievable


def test_headtail_by_default_the_tool_never_changes_and_the_index_is_bounded() -> None:
    strategy = HeadTailStrategy(head=10, tail=10, max_listed=3)
    strategy.add({"role": "user", "content": "x" * 100})
    strategy.add({"role": "assistant", "content": "y" * 100})
    strategy.add({"role": "user", "content": "next"})
    offered = [strategy.window().tools]
    for i in range(6):
        strategy.add({"role": "assistant", "content": f"{i}" * 100})
        strategy.add({"role": "user", "content": "more"})
        offered.append(strategy.window().tools)
    # Memories were added on every request, yet the definition is byte-identical.
    assert offered == [[retrieve_tool(STABLE_TOOL_INTRO)]] * 7
    window = strategy.window()
    index = window.messages[-2]["content"]
    assert index.startswith(INDEX_INTRO)
    assert index.count("\nid=m") == 3  # only the newest three are listed
    assert "(5 older memories, m1 to m5, are not listed" in index
    assert "id=m8 |" in index and "id=m5 |" not in index
    assert strategy.tool_handler("retrieve_memory", {"id": "m1"}) == "x" * 80  # still retrievable


# --- registry: a module:Class strategy keeps its own name -----------------------------

CUSTOM_MODULE = "ctxeval_custom_strategies"
CUSTOM_STRATEGIES = """
from pytest_ctxeval.strategies.base import BaseStrategy, Window
from pytest_ctxeval.strategies.headtail import (
    INDEX_INTRO,
    STABLE_TOOL_INTRO,
    HeadTailStrategy,
    retrieve_tool,
)


class WiderHeadTail(HeadTailStrategy):
    def __init__(self) -> None:
        super().__init__(head=300, tail=300)


class Mine(BaseStrategy):
    def window(self):
        return Window(messages=list(self.history))


class Named(Mine):
    name = "named-mine"


class ClaimsHeadTail(Mine):
    name = "headtail"
"""


@pytest.fixture
def custom_dir(tmp_path: Path) -> Iterator[list[Path]]:
    """A folder with a strategy module, found the way ``strategies/`` is."""
    (tmp_path / f"{CUSTOM_MODULE}.py").write_text(CUSTOM_STRATEGIES, encoding="utf-8")
    yield [tmp_path]
    sys.modules.pop(CUSTOM_MODULE, None)


def test_a_subclass_of_a_built_in_is_named_as_written_not_after_its_parent(
    custom_dir: list[Path],
) -> None:
    specs = resolve(f"{CUSTOM_MODULE}:WiderHeadTail,headtail", preset_dirs=custom_dir)
    assert [s.name for s in specs] == [f"{CUSTOM_MODULE}:WiderHeadTail", "headtail"]
    assert [type(s.create()).__name__ for s in specs] == ["WiderHeadTail", "HeadTailStrategy"]


def test_a_base_strategy_subclass_is_not_called_base(custom_dir: list[Path]) -> None:
    (spec,) = resolve(f"{CUSTOM_MODULE}:Mine", preset_dirs=custom_dir)
    assert spec.name == f"{CUSTOM_MODULE}:Mine"


def test_a_class_that_sets_its_own_name_is_called_by_it(custom_dir: list[Path]) -> None:
    (spec,) = resolve(f"{CUSTOM_MODULE}:Named", preset_dirs=custom_dir)
    assert spec.name == "named-mine"
    assert [s.name for s in resolve("pytest_ctxeval.strategies.sliding:SlidingStrategy")] == [
        "sliding"
    ]


def test_two_different_strategies_with_one_name_are_an_error_naming_both(
    custom_dir: list[Path],
) -> None:
    with pytest.raises(StrategyNameClashError) as info:
        resolve(f"{CUSTOM_MODULE}:ClaimsHeadTail,headtail", preset_dirs=custom_dir)
    assert str(info.value) == (
        f"'{CUSTOM_MODULE}:ClaimsHeadTail' and 'headtail' are different strategies with the "
        "same name 'headtail'; a module:Class strategy is named as written unless its class "
        "sets its own name"
    )
    assert isinstance(info.value, UnknownStrategyError)  # the plugin reports it as a usage error
    with pytest.raises(StrategyNameClashError, match=r"'headtail' \(from 'all'\) and "):
        resolve(f"all,{CUSTOM_MODULE}:ClaimsHeadTail", preset_dirs=custom_dir)


def test_the_same_strategy_named_twice_runs_once(custom_dir: list[Path]) -> None:
    assert [s.name for s in resolve("full,full")] == ["full"]
    assert [s.name for s in resolve("full,all")].count("full") == 1
    mine = f"{CUSTOM_MODULE}:Mine"
    assert [s.name for s in resolve(f"{mine},{mine}", preset_dirs=custom_dir)] == [mine]
    # The built-in class by its module path is the built-in itself.
    headtail = "pytest_ctxeval.strategies.headtail:HeadTailStrategy"
    assert [s.name for s in resolve(f"{headtail},headtail")] == ["headtail"]
