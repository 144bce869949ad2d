"""The model-free path does its per-message work once: copies of plain text
messages are not hashed again or deep-copied value by value, number series
are not scrubbed item by item, and none of it changes what comes out."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import fed, twin_windows

from pytest_ctxeval import redact
from pytest_ctxeval.evaluate import simulate as simulate_module
from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.llm import request_blocks
from pytest_ctxeval.llm.prompt_cache import OPENAI, PromptCache
from pytest_ctxeval.messages import identical_prefix_length
from pytest_ctxeval.strategies import unchanged_prefix
from pytest_ctxeval.strategies.base import BaseStrategy, Window, copy_message, fork_strategy
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import HeadTailStrategy
from pytest_ctxeval.strategies.observation_mask import ObservationMaskStrategy
from pytest_ctxeval.strategies.toolprune import ToolPruneStrategy

Message = dict[str, Any]


class _Keeper(BaseStrategy):
    """Sends its whole history, like ``full``."""

    name = "keeper"

    def window(self) -> Window:
        return Window(messages=list(self.history))


class _Editor(_Keeper):
    """Edits what it is given, in place: the session must not see it."""

    def add(self, message: Message) -> None:
        for call in message.get("tool_calls") or []:
            call["function"]["name"] = "edited"
        if isinstance(message.get("content"), str):
            message["content"] += " (edited)"
        super().add(message)


def _session(pairs: int) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": "You help."}]
    for i in range(pairs):
        messages.append({"role": "user", "content": f"question {i}"})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    return messages


def _conversation(messages: list[Message]) -> Any:
    # What ``simulate`` reads of a Conversation: one chat of these messages.
    return SimpleNamespace(messages=messages, session_starts=[], recorded_windows=None)


def _counting_deepcopy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    # Calls from outside the copy module (its own recursion binds deepcopy early).
    calls: list[int] = []
    original = copy.deepcopy

    def counted(value: Any, memo: Any = None, _nil: Any = ()) -> Any:
        calls.append(1)
        return original(value, memo)

    monkeypatch.setattr(copy, "deepcopy", counted)
    return calls


def test_a_copied_plain_message_is_not_hashed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    digest = request_blocks.message_digest

    def counted(message: Any, items: Any) -> bytes:
        calls.append(1)
        return digest(message, items)

    monkeypatch.setattr(request_blocks, "message_digest", counted)
    cache = PromptCache(OPENAI, lambda m: 2000, lambda tools: 0)
    session = _session(50)
    cache.send(session)
    # A forked strategy's window: equal messages, new objects.
    use = cache.peek([dict(m) for m in session])
    assert len(calls) == len(session)
    assert use.cached_tokens == 2000 * len(session) // 128 * 128


def test_messages_that_only_look_alike_are_not_mixed_up() -> None:
    # 1 == 1.0 == True as dict items, but not as JSON: each is its own block.
    cache = PromptCache(OPENAI, lambda m: 2000, lambda tools: 0)
    cache.send([{"role": "user", "content": "x", "n": 1}])
    use = cache.peek([{"role": "user", "content": "x", "n": 1.0}])
    assert use.cached_tokens == 0


def test_the_identical_prefix_counts_objects_not_equal_values() -> None:
    a, b, c = {"x": 1}, {"x": 2}, {"x": 3}
    assert identical_prefix_length([a, b, c], [a, b, c, {"x": 4}]) == 3
    assert identical_prefix_length([a, b, c], [a, dict(b), c]) == 1
    assert identical_prefix_length([], [a]) == 0
    assert identical_prefix_length([a, b], [a]) == 1


def test_plain_messages_are_copied_without_deepcopy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_deepcopy(monkeypatch)
    trace = simulate(_conversation(_session(30)), _Keeper(), client=None, model="ctxeval/oracle")
    assert calls == []
    assert len(trace.requests) == 30


def test_fork_copies_plain_messages_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    strategy = _Keeper()
    for message in _session(100):
        strategy.add(message)
    calls: list[int] = []
    copy_dict = copy._deepcopy_dispatch[dict]  # type: ignore[attr-defined]

    def counted(value: Any, memo: Any, deepcopy: Any = copy.deepcopy) -> Any:
        calls.append(1)
        return copy_dict(value, memo, deepcopy)

    monkeypatch.setitem(copy._deepcopy_dispatch, dict, counted)  # type: ignore[attr-defined]
    fork = fork_strategy(strategy)
    # The strategy's own attributes, not each of the 201 messages.
    assert len(calls) < 5
    assert fork.history == strategy.history  # type: ignore[attr-defined]
    assert all(a is not b for a, b in zip(fork.history, strategy.history, strict=True))  # type: ignore[attr-defined]


def test_a_fork_is_still_a_deep_copy() -> None:
    strategy = _Keeper()
    shared: Message = {"role": "user", "content": "twice"}
    call: dict[str, Any] = {"id": "c1", "type": "function", "function": {"name": "f"}}
    nested: Message = {"role": "assistant", "content": None, "tool_calls": [call]}
    for message in (shared, nested, shared):
        strategy.add(message)
    fork: Any = fork_strategy(strategy)
    # A message listed twice is one copy, as deepcopy gives it.
    assert fork.history[0] is fork.history[2] and fork.history[0] is not shared
    fork.history[0]["content"] = "changed"
    fork.history[1]["tool_calls"][0]["function"]["name"] = "changed"
    assert shared["content"] == "twice"
    assert call["function"]["name"] == "f"


def test_a_strategy_editing_what_it_is_given_leaves_the_session_alone() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        *_session(2),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    before = copy.deepcopy(messages)
    simulate(_conversation(messages), _Editor(), client=None, model="ctxeval/oracle")
    assert messages == before


def test_copy_message_deep_copies_anything_but_plain_values() -> None:
    nested: Message = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    copied = copy_message(nested)
    assert copied == nested and copied["content"] is not nested["content"]
    plain: Message = {"role": "user", "content": "hi", "name": None}
    assert copy_message(plain) == plain and copy_message(plain) is not plain
    assert simulate_module.copy_message is copy_message


def test_number_series_are_not_scrubbed_item_by_item(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    inner = redact._scrub_data

    def counted(value: Any, values: Any) -> Any:
        calls.append(1)
        return inner(value, values)

    monkeypatch.setattr(redact, "_scrub_data", counted)
    series = list(range(1000))
    scrubbed = redact.scrub_data({"session_prompt_tokens": series})
    assert scrubbed == {"session_prompt_tokens": series}
    assert scrubbed["session_prompt_tokens"] is not series  # still a copy
    assert len(calls) < 10


def test_a_secret_in_a_list_with_numbers_is_still_scrubbed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-test-0123456789abcdefghijklmnop"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    scrubbed = redact.scrub_data({"values": [1, 2.5, None, f"key {secret}"], "pair": (3, secret)})
    assert secret not in repr(scrubbed)
    assert scrubbed["values"][:3] == [1, 2.5, None]
    assert isinstance(scrubbed["pair"], tuple)


def _numbered(n: int) -> list[Message]:
    return [{"role": "user", "content": f"message {i} " + "word " * 300} for i in range(n)]


def test_a_session_that_extends_its_window_keeps_one_stored_prompt() -> None:
    # Storing a request must not cost a write per message it repeats: the
    # whole growing session is one entry, and it still serves every prefix.
    messages = _numbered(40)
    cache = PromptCache(OPENAI, lambda m: 300, lambda t: 0)
    uses = [cache.send(messages[:n]) for n in range(1, 41)]
    assert len(cache._prompts) == 1
    assert [u.cached_tokens for u in uses[4:7]] == [1152, 1408, 1792]
    # A shorter request still reads from the longer prompt that holds it.
    assert cache.peek(messages[:10]).cached_tokens == 2944


def test_a_sliding_window_keeps_only_prompts_still_alive() -> None:
    messages = _numbered(60)
    cache = PromptCache(OPENAI, lambda m: 300, lambda t: 0, seconds_per_request=30)
    for n in range(10, 60):
        cache.send(messages[n - 10 : n])  # each request drops the oldest message
    # Five minutes at 30 s a request: the prompts of the last eleven requests.
    assert len(cache._prompts) == 11


def test_a_fork_and_its_original_extend_their_requests_independently() -> None:
    # A request that only adds messages appends to the previous one's lists;
    # a fork shares them, so neither side may see the other's additions.
    base, mine, theirs = _numbered(30), _numbered(45)[30:], _numbered(60)[45:]

    def uses(cache: PromptCache, requests: list[list[Message]]) -> list[tuple[int, int, Any]]:
        return [
            (u.prompt_tokens, u.cached_tokens, u.cache_break) for u in map(cache.send, requests)
        ]

    growing = [base[:n] for n in range(1, 31)]
    original = PromptCache(OPENAI, lambda m: 300, lambda t: 0)
    uses(original, growing)
    fork = original.fork()
    after_mine = [base + mine[:n] for n in range(1, 16)]
    after_theirs = [base + theirs[:n] for n in range(1, 16)]
    got_mine, got_theirs = uses(original, after_mine), uses(fork, after_theirs)
    for requests, got in ((after_mine, got_mine), (after_theirs, got_theirs)):
        alone = PromptCache(OPENAI, lambda m: 300, lambda t: 0)
        uses(alone, growing)
        assert uses(alone, requests) == got
    theirs_again = base + theirs[:15]
    assert original.peek(theirs_again).cached_tokens < fork.peek(theirs_again).cached_tokens


TOOL_RESULT_CASES = [
    (ToolPruneStrategy, {}),
    (ToolPruneStrategy, {"max_output_tokens": 40}),
    (ToolPruneStrategy, {"budget_tokens": 900}),
    (ToolPruneStrategy, {"keep_last": 0}),
    (ObservationMaskStrategy, {}),
    (FullStrategy, {}),
    (HeadTailStrategy, {}),
    (HeadTailStrategy, {"head": 10, "tail": 10}),
    (HeadTailStrategy, {"head": 10, "tail": 10, "listing": "tool"}),
    (HeadTailStrategy, {"head": 10, "tail": 10, "budget_tokens": 900}),
]


def _tool_result_sessions() -> list[tuple[list[Message], Any]]:
    from pytest_ctxeval.strategies.invariant_sessions import multi_chat_session, tool_session

    multi = multi_chat_session()
    return [(tool_session(14), ()), (multi.messages, multi.chat_starts)]


@pytest.mark.parametrize(("kind", "params"), TOOL_RESULT_CASES)
def test_a_tool_result_window_never_claims_more_of_the_previous_one_than_it_keeps(
    kind: type[BaseStrategy], params: dict[str, Any]
) -> None:
    # Replay takes the strategy's word for how much of each window is the
    # previous window's very objects (it does not compare them): a claim
    # one message too long would price a changed message as cached.
    for messages, starts in _tool_result_sessions():
        strategy = kind(**params)
        previous: list[Message] = []
        claims = exact = 0
        for index in fed(strategy, messages, starts):
            if index == 9:  # a pipeline's earlier stage condenses a message
                strategy.revise(3, {**strategy.history[3], "content": "condensed"})
            window = strategy.window()
            claim, kept = (
                strategy.unchanged_prefix,
                identical_prefix_length(previous, window.messages),
            )
            if claim is not None:
                assert claim <= kept, f"{kind.name} {params} message {index}"
                claims, exact = claims + 1, exact + (claim == kept)
            previous = window.messages
        # ... and it is a claim replay can use: present and exact nearly always.
        if "budget_tokens" not in params:
            # headtail builds afresh while a chat's head turns are still coming.
            afresh = 6 * (len(starts) + 1) if kind is HeadTailStrategy else 1
            assert claims >= len(messages) - afresh and exact >= 0.8 * claims


@pytest.mark.parametrize(("kind", "params"), TOOL_RESULT_CASES)
def test_replay_with_the_strategys_word_prices_every_request_as_comparing_would(
    kind: type[BaseStrategy], params: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def replay() -> list[Any]:
        traces = []
        for messages, starts in _tool_result_sessions():
            conversation = SimpleNamespace(
                messages=messages, session_starts=list(starts), recorded_windows=None
            )
            strategy = kind(**params)
            trace = simulate(conversation, strategy, client=None, model="ctxeval/oracle")
            traces.append((trace.requests, trace.cache.break_count if trace.cache else 0))
        return traces

    trusted = replay()
    monkeypatch.setattr(unchanged_prefix, "_TRACKING", set())
    assert replay() == trusted


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"max_chars": 400},
        {"unit": "tokens", "max_tokens": 150},
        {"unit": "items", "max_chars": 30},
    ],
    ids=["default", "short", "tokens", "items"],
)
def test_truncate_built_on_its_previous_windows_is_truncate_built_afresh(
    params: dict[str, Any],
) -> None:
    # Each window scans only the messages since the previous one; a twin
    # that forgets before every window must see the same, through tool
    # calls, a pipeline's revision and new chats.
    from pytest_ctxeval.strategies.truncate import TruncateStrategy

    def forget(strategy: TruncateStrategy) -> None:
        strategy._forget()

    for index, mine, theirs in twin_windows(
        lambda: TruncateStrategy(**params), forget, _tool_result_sessions(), revise_at=9
    ):
        assert mine.messages == theirs.messages, f"message {index}"


@pytest.mark.parametrize(
    "stages",
    ["toolprune+sliding", "observation-mask+headtail", "toolprune+observation-mask+truncate"],
)
def test_a_pipeline_passes_on_the_same_rewrites_when_it_takes_the_stages_word(
    stages: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pipeline hands each rewrite of an earlier stage to the next one; a
    # built-in tool-result stage says how much of its window it kept, so
    # only the rest is looked at.  Every window, and the replay, must be
    # what looking at every message gives.
    from pytest_ctxeval.strategies.invariants import oracle_context
    from pytest_ctxeval.strategies.registry import resolve

    def windows() -> list[Any]:
        seen = []
        for messages, starts in _tool_result_sessions():
            strategy = resolve(stages)[0].create()
            strategy.setup(oracle_context())
            for index, message in enumerate(messages):
                if index in starts:
                    strategy.end_session()
                strategy.add(dict(message))
                seen.append(strategy.window().messages)
                if index == 20:  # a probe's fork, then the session goes on
                    seen.append(fork_strategy(strategy).window().messages)
            conversation = SimpleNamespace(
                messages=messages, session_starts=list(starts), recorded_windows=None
            )
            trace = simulate(
                conversation, resolve(stages)[0].create(), client=None, model="ctxeval/oracle"
            )
            seen.append(trace.requests)
        return seen

    trusted = windows()
    monkeypatch.setattr(unchanged_prefix, "_TRACKING", set())
    assert windows() == trusted
