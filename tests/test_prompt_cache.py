"""The prompt-cache model on hand-built request lists: one word is one token
here, so every figure can be worked out by hand."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_ctxeval.llm import prompt_cache, request_blocks
from pytest_ctxeval.llm.cache_rules import ANTHROPIC_MINIMUMS, anthropic_minimum
from pytest_ctxeval.llm.prompt_cache import (
    ANTHROPIC,
    ANTHROPIC_AUTO,
    OPENAI,
    CacheRules,
    PromptCache,
    rules_for,
)

Message = dict[str, Any]


def words(n: int, word: str = "w") -> str:
    return " ".join([word] * n)


def count_message(message: Message) -> int:
    return len(str(message.get("content") or "").split())


def count_tools(tools: Any) -> int:
    return 10 * len(tools)


def cache(rules: CacheRules = OPENAI, **kw: Any) -> PromptCache:
    return PromptCache(rules, count_message, count_tools, **kw)


def msg(role: str, n: int, word: str = "w") -> Message:
    return {"role": role, "content": words(n, word)}


SYSTEM = msg("system", 1100)
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


def growing_session(turns: int, per_turn: int = 100) -> list[list[Message]]:
    """Append-only requests, as ``full`` sends them (the same objects each time)."""
    history: list[Message] = [SYSTEM]
    requests = []
    for turn in range(turns):
        history = [*history, msg("user", per_turn, f"u{turn}")]
        requests.append(history)
        history = [*history, msg("assistant", per_turn, f"a{turn}")]
    return requests


# -- OpenAI: automatic, 1,024-token minimum, 128-token steps --------------------------------


def test_openai_reads_the_previous_prompt_in_128_token_steps() -> None:
    c = cache()
    first, second = growing_session(2)
    assert c.send(first).cached_tokens == 0
    use = c.send(second)
    # The first prompt was 1,200 tokens; 1,152 of them in whole 128-token steps.
    assert use.prompt_tokens == 1100 + 100 + 100 + 100
    assert use.cached_tokens == 1152
    assert use.write_tokens == 0


def test_openai_caches_nothing_under_1024_tokens() -> None:
    c = cache()
    short = [msg("system", 900), msg("user", 50)]
    c.send(short)
    assert c.send([*short, msg("assistant", 5), msg("user", 5)]).cached_tokens == 0


def test_a_request_reads_from_any_earlier_prompt_not_only_the_previous() -> None:
    c = cache()
    long_turn = [SYSTEM, msg("user", 600, "x")]
    c.send(long_turn)
    c.send([SYSTEM, msg("user", 10, "other")])  # shares only the system prompt
    use = c.send([*long_turn, msg("assistant", 5), msg("user", 5)])
    assert use.cached_tokens == 1664  # 1,700 shared with the first request, in 128 steps


@pytest.mark.parametrize("rules", [OPENAI, ANTHROPIC])
def test_a_new_first_message_shares_nothing_but_the_tools_and_an_old_one_reads_again(
    rules: CacheRules,
) -> None:
    # The requests after the first message are the very same objects each
    # time; only the system prompt (a clock) changes, then comes back.
    c = cache(rules)
    monday, tuesday = msg("system", 1100, "monday"), msg("system", 1000, "tuesday")
    # Long enough that the lists share whole chunks, not just items.
    turns = [msg("user", 300, "u"), *(msg("assistant", 1, f"a{i}") for i in range(600))]
    c.send([monday, *turns], [TOOL])
    on_tuesday = c.send([tuesday, *turns], [TOOL])
    assert on_tuesday.prompt_tokens == 10 + 1000 + 900
    assert on_tuesday.cached_tokens == 0  # the tools alone: 10 tokens, under any minimum
    assert on_tuesday.cache_break is not None and on_tuesday.cache_break.message == 0
    back = c.send([monday, *turns, msg("user", 5)], [TOOL])
    # Monday's prompt, 2,010 tokens, is still alive: read whole under breakpoints,
    # in 128-token steps under automatic caching.
    assert back.cached_tokens == (1920 if rules is OPENAI else 2010)


def test_the_tool_definitions_are_part_of_the_prefix() -> None:
    c = cache()
    first, second = growing_session(2)
    c.send(first, [TOOL])
    assert c.send(second, [TOOL]).cached_tokens == 1152 + 0  # 1,210 -> 1,152
    changed = {"type": "function", "function": {"name": "lookup2", "parameters": {}}}
    use = c.send([*second, msg("assistant", 1), msg("user", 1)], [changed])
    assert use.cached_tokens == 0
    assert use.cache_break is not None
    assert (use.cache_break.message, use.cache_break.reason) == (None, "tool_changed")


def test_reordered_keys_in_a_tool_definition_break_the_cache() -> None:
    c = cache()
    first, second = growing_session(2)
    c.send(first, [TOOL])
    reordered = {"function": TOOL["function"], "type": "function"}  # equal as a dict
    use = c.send(second, [reordered])
    assert use.cached_tokens == 0
    assert use.cache_break is not None and use.cache_break.reason == "tool_key_order"


# -- the time to live -----------------------------------------------------------------------


def test_an_entry_expires_after_five_minutes_without_use() -> None:
    slow = cache(seconds_per_request=301)
    first, second = growing_session(2)
    slow.send(first)
    assert slow.send(second).cached_tokens == 0
    quick = cache(seconds_per_request=299)
    quick.send(first)
    assert quick.send(second).cached_tokens == 1152


def test_reading_an_entry_keeps_it_alive() -> None:
    c = cache(seconds_per_request=200)
    requests = growing_session(4)
    uses = [c.send(r) for r in requests]
    # 600 s after the first write, the system prompt is still read: each
    # request refreshed it.
    assert all(u.cached_tokens >= 1024 for u in uses[1:])


def test_explicit_times_override_the_pace() -> None:
    c = cache()
    first, second = growing_session(2)
    c.send(first, at_s=0)
    assert c.send(second, at_s=1000).cached_tokens == 0


# -- Anthropic: breakpoints, write premium, minimum by model --------------------------------


def test_anthropic_writes_then_reads_at_the_last_message_breakpoint() -> None:
    c = cache(ANTHROPIC)
    first, second = growing_session(2)
    one = c.send(first)
    assert (one.cached_tokens, one.write_tokens) == (0, 1200)
    two = c.send(second)
    # Read up to the end of the first request (found looking back from the
    # last message), write the rest: no 128-token steps.
    assert (two.cached_tokens, two.write_tokens) == (1200, 200)


def test_anthropic_looks_back_at_most_20_blocks_from_a_breakpoint() -> None:
    c = cache(ANTHROPIC)
    first = [SYSTEM, msg("user", 100)]
    c.send(first)
    far = [*first, *(msg("user" if i % 2 else "assistant", 2, f"m{i}") for i in range(21))]
    use = c.send(far)
    assert use.cached_tokens == 1100  # only the system prompt's breakpoint is within reach


def test_anthropic_haiku_needs_2048_tokens() -> None:
    haiku = rules_for("anthropic/claude-3-5-haiku-20241022")
    assert haiku.min_tokens == 2048
    c = cache(haiku)
    first, second = growing_session(2)
    assert c.send(first).write_tokens == 0  # 1,200 tokens: too short to cache
    assert c.send(second).cached_tokens == 0


@pytest.mark.parametrize(
    ("model", "provider", "name", "minimum"),
    [
        ("anthropic/claude-sonnet-4-20250514", "anthropic", "anthropic", 1024),
        ("claude-3-haiku-20240307", None, "anthropic", 2048),
        ("bedrock/anthropic.claude-3-5-sonnet", "bedrock", "anthropic", 1024),
        ("gpt-4o-mini", "openai", "openai", 1024),
        ("ctxeval/oracle", None, "openai", 1024),
        ("ctxeval/claude-echo", None, "openai", 1024),
    ],
)
def test_the_rule_set_follows_the_provider(
    model: str, provider: str | None, name: str, minimum: int
) -> None:
    rules = rules_for(model, provider)
    assert (rules.name, rules.min_tokens) == (name, minimum)


# Anthropic's minimum cacheable prompt length per model family, as its
# prompt-caching page lists it ("Cache limitations"): one case per family.
FAMILY_MINIMUMS = [
    ("anthropic/claude-opus-4-6", "Claude Opus 4.6", 4096),
    ("anthropic/claude-opus-4-5-20251101", "Claude Opus 4.5", 4096),
    ("anthropic/claude-haiku-4-5-20251001", "Claude Haiku 4.5", 4096),
    ("anthropic/claude-opus-4-7", "Claude Opus 4.7", 2048),
    ("anthropic/claude-mythos-preview", "Claude Mythos Preview", 2048),
    ("anthropic/claude-opus-4-8", "Claude Opus 4.8", 1024),
    ("anthropic/claude-opus-4-1-20250805", "Claude Opus 4.1", 1024),
    ("anthropic/claude-opus-4-20250514", "Claude Opus 4", 1024),
    ("anthropic/claude-sonnet-4-6", "Claude Sonnet 4.6", 1024),
    ("anthropic/claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", 1024),
    ("anthropic/claude-sonnet-4-20250514", "Claude Sonnet 4", 1024),
    ("anthropic/claude-3-7-sonnet-20250219", "Claude Sonnet 3.7", 1024),
    ("anthropic/claude-3-5-sonnet-20240620", "Claude Sonnet 3.5", 1024),
    ("anthropic/claude-3-opus-20240229", "Claude Opus 3", 1024),
    ("anthropic/claude-3-5-haiku-20241022", "Claude Haiku 3.5", 2048),
    ("claude-3-haiku-20240307", "Claude Haiku 3", 2048),
    ("anthropic/claude-sonnet-5", "Claude Sonnet 5", 1024),
    ("anthropic/claude-opus-5", "Claude Opus 5 / 5.5", 512),
    ("anthropic/claude-opus-5-5", "Claude Opus 5 / 5.5", 512),
    ("anthropic/claude-fable-5-1", "Claude Fable 5 / 5.1", 512),
    ("anthropic/claude-mythos-5", "Claude Mythos 5 / 5.1", 512),
]


@pytest.mark.parametrize(("model", "family", "minimum"), FAMILY_MINIMUMS)
def test_a_breakpoint_writes_from_the_model_familys_documented_minimum(
    model: str, family: str, minimum: int
) -> None:
    rules = rules_for(model)
    assert anthropic_minimum(model) == (family, minimum)
    short, enough = cache(rules), cache(rules)
    assert short.send([msg("system", minimum - 1)]).write_tokens == 0
    assert enough.send([msg("system", minimum)]).write_tokens == minimum


def test_every_family_in_the_table_has_a_case() -> None:
    assert {family for family, _, _ in ANTHROPIC_MINIMUMS} == {f for _, f, _ in FAMILY_MINIMUMS}


def test_a_claude_model_the_table_does_not_name_gets_the_common_minimum() -> None:
    assert anthropic_minimum("anthropic/claude-nimbus-9") == (None, 1024)
    assert rules_for("anthropic/claude-nimbus-9").min_tokens == 1024


def test_anthropic_automatic_caching_writes_only_at_the_last_block() -> None:
    """A top-level cache_control puts one breakpoint on the last block: a
    request whose last message changed finds nothing written at the end of
    the system prompt, where explicit breakpoints would have written."""
    first, second = [SYSTEM, msg("user", 100, "a")], [SYSTEM, msg("user", 100, "b")]
    explicit, automatic = cache(ANTHROPIC), cache(ANTHROPIC_AUTO)
    for c in (explicit, automatic):
        assert c.send(first).write_tokens == 1200
    assert explicit.send(second).cached_tokens == 1100
    use = automatic.send(second)
    assert (use.cached_tokens, use.write_tokens) == (0, 1200)
    # A growing conversation reads everything up to the previous last block.
    growing = cache(ANTHROPIC_AUTO)
    one, two = growing_session(2)
    growing.send(one)
    assert growing.send(two).cached_tokens == 1200


def test_the_cache_model_option_names_the_model_familys_minimum() -> None:
    from pytest_ctxeval.evaluate.session_costs import cache_rules_named

    rules = cache_rules_named("anthropic", "anthropic/claude-opus-4-6")
    assert rules is not None and (rules.name, rules.min_tokens) == ("anthropic", 4096)
    auto = cache_rules_named("anthropic-auto", "anthropic/claude-haiku-4-5")
    assert auto is not None and (auto.name, auto.min_tokens) == ("anthropic-auto", 4096)
    assert cache_rules_named("openai", "anthropic/claude-opus-4-6") is OPENAI


# -- the cache-breaker detector -------------------------------------------------------------


def breaks_of(requests: list[list[Message]]) -> list[dict[str, Any]]:
    c = cache()
    for request in requests:
        c.send(request)
    return [b.as_dict() for b in c.breaks]


def test_a_clock_in_the_system_prompt_is_named_as_the_breaker() -> None:
    def at(time: str) -> Message:
        return {"role": "system", "content": f"{words(1100)}\nCurrent time: 2026-01-01T{time}Z"}

    user = msg("user", 10)
    assert breaks_of([[at("10:00:00"), user], [at("10:00:31"), user, msg("user", 3)]]) == [
        {"request": 2, "message": 0, "reason": "timestamp"}
    ]


def test_whitespace_only_edits_are_named() -> None:
    user = msg("user", 10)
    edited = {"role": "user", "content": user["content"] + " \n"}
    assert breaks_of([[SYSTEM, user], [SYSTEM, edited, msg("user", 1)]]) == [
        {"request": 2, "message": 1, "reason": "whitespace"}
    ]


def test_key_order_of_a_message_is_named() -> None:
    user = msg("user", 10)
    reordered = {"content": user["content"], "role": "user"}
    assert breaks_of([[SYSTEM, user], [SYSTEM, reordered]]) == [
        {"request": 2, "message": 1, "reason": "key_order"}
    ]


def test_a_summary_in_place_of_earlier_turns_is_an_edit() -> None:
    turns = [msg("user", 10, "a"), msg("assistant", 10, "b"), msg("user", 10, "c")]
    summary = {"role": "user", "content": "Summary: they talked about a and b."}
    assert breaks_of([[SYSTEM, *turns], [SYSTEM, summary, turns[2], msg("user", 1)]]) == [
        {"request": 2, "message": 1, "reason": "message_edited"}
    ]


def test_a_sliding_window_removes_messages() -> None:
    turns = [msg("user", 10, "a"), msg("assistant", 10, "b"), msg("user", 10, "c")]
    assert breaks_of([[SYSTEM, *turns], [SYSTEM, turns[2], msg("assistant", 2)]]) == [
        {"request": 2, "message": 1, "reason": "message_removed"}
    ]


def test_an_append_only_session_never_breaks() -> None:
    assert breaks_of(growing_session(5)) == []


def test_the_breaks_kept_are_capped_but_all_are_counted() -> None:
    c = cache()
    for turn in range(prompt_cache.MAX_BREAKS + 5):
        c.send([msg("system", 3, f"s{turn}"), msg("user", 1)])
    assert len(c.breaks) == prompt_cache.MAX_BREAKS
    assert c.break_count == prompt_cache.MAX_BREAKS + 4


# -- linear work ------------------------------------------------------------------------------


def test_each_message_is_hashed_once_however_many_requests_repeat_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    digest = request_blocks.message_digest
    monkeypatch.setattr(
        request_blocks, "message_digest", lambda m, items: calls.append(1) or digest(m, items)
    )
    c = cache()
    requests = growing_session(100)
    for request in requests:
        c.send(request)
    # The last request holds every message of the session: each was hashed once.
    assert len(calls) == len(requests[-1]) == 200


@pytest.mark.parametrize("rules", [OPENAI, ANTHROPIC])
def test_a_long_session_that_edits_its_window_is_priced_as_if_each_request_were_new(
    rules: CacheRules,
) -> None:
    """Requests share their leading blocks with the request before (by chunks
    of the lists); over 800 messages that rewrite one near the end, now
    and then one deep in, and fork, every figure matches requests whose
    messages are all fresh copies (nothing shared)."""
    rng = random.Random(11)
    window: list[Message] = [msg("system", 40)]
    shared, fresh = cache(rules), cache(rules)
    read = 0
    forks: list[tuple[PromptCache, PromptCache, list[Message]]] = []
    for turn in range(400):
        window = [*window, msg("user", rng.randint(1, 30)), msg("assistant", 5)]
        if turn % 3 == 0 and len(window) > 4:  # prune a result near the end, like toolprune
            at = len(window) - rng.randint(2, 4)
            window[at] = msg(window[at]["role"], 1, f"pruned{turn}")
        if turn % 97 == 0 and len(window) > 300:  # now and then an edit deep in the window
            at = rng.randint(1, len(window) - 1)
            window[at] = msg(window[at]["role"], 2, f"edited{turn}")
        seconds = turn * 20.0
        use = shared.send(window, at_s=seconds)
        assert use == fresh.send([dict(m) for m in window], at_s=seconds), turn
        read += use.cached_tokens
        if turn in (200, 330):
            forks.append((shared.fork(), fresh.fork(), list(window)))
    for shared_fork, fresh_fork, at_fork in forks:
        longer = [*at_fork, msg("user", 3)]
        use = shared_fork.send(longer, at_s=12_000.0)
        assert use == fresh_fork.send([dict(m) for m in longer], at_s=12_000.0)
    assert shared.break_count == fresh.break_count > 0
    assert read > 0


def test_peek_does_not_change_the_cache() -> None:
    c = cache()
    first, second = growing_session(2)
    c.send(first)
    assert c.peek(second).cached_tokens == 1152
    assert c.requests == 1
    assert c.send(second).cached_tokens == 1152


def test_a_clock_inside_a_long_prompt_is_found_and_other_edits_are_not_clocks() -> None:
    def system(time: str, rule: str = "Be brief.") -> Message:
        return {"role": "system", "content": f"{words(3000)}\nNow: {time}.\n{rule}\n{words(3000)}"}

    user = msg("user", 10)
    clock = [[system("Mon 09:59:59"), user], [system("Tue 10:00:00"), user]]
    assert breaks_of(clock)[0]["reason"] == "timestamp"
    edited = [[system("10:00"), user], [system("10:00", "Be thorough and cite."), user]]
    assert breaks_of(edited)[0]["reason"] == "message_edited"


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("a b", "a  b", True),
        ("a b", "ab", True),  # words run together: the same characters apart from whitespace
        ("ab", "a\tb\n", True),
        ("a b", "a c", False),
        ("x 12 older", "x 13 older", False),
        ("abc", "abcd", False),
        ("abc", "abc \n", True),
        ("abc\u00a0", "abc", True),  # any Unicode whitespace
        ("", " \n", True),
    ],
)
def test_whitespace_only_means_the_same_text_once_whitespace_is_dropped(
    old: str, new: str, same: bool
) -> None:
    from pytest_ctxeval.llm.cache_breaks import _common_prefix, _only_whitespace_differs

    at = _common_prefix(old, new)
    assert _only_whitespace_differs(old, new, at) is same
    assert _only_whitespace_differs(new, old, at) is same
