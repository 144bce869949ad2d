"""The mock models: the oracle answers honestly from what it is sent;
lost-in-middle follows Liu et al.; echo echoes.  Mock and real runs share the
litellm path, so the mocks are also called through ``litellm.completion``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_ctxeval.llm.oracle import (
    NO_ANSWER,
    lost_in_middle_attention,
    lost_in_middle_probability,
    respond,
    summarise,
)
from pytest_ctxeval.strategies.headtail import INDEX_INTRO, HeadTailStrategy, retrieve_tool

SECRET = "SPECIAL_API_KEY = 'secret-9981'"
QUESTION = "What is SPECIAL_API_KEY?"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@pytest.fixture(scope="module")
def litellm():
    from pytest_ctxeval.llm._litellm import get_litellm

    return get_litellm()


# -- answers from the visible messages only ------------------------------------------------


def test_answers_with_the_matching_visible_sentence():
    reply = respond(
        [
            user("Before we start: the launch code is ZEBRA-42."),
            assistant("Noted."),
            user("My cat is called Miso."),
            user("What is the launch code?"),
        ]
    )
    assert reply.tool_calls == []
    assert "ZEBRA-42" in reply.content
    assert "Miso" not in reply.content


def test_does_not_invent_what_it_was_not_sent():
    fact = user("Before we start: the launch code is ZEBRA-42.")
    rest = [user("My cat is called Miso."), assistant("Lovely name.")]
    question = user("What is the launch code?")
    assert "ZEBRA-42" in respond([fact, *rest, question]).content
    # The same conversation without the message that held the fact.
    assert respond([*rest, question]).content == NO_ANSWER


def test_the_latest_statement_of_a_fact_wins():
    reply = respond(
        [
            user("The deploy port is 5432."),
            assistant("Noted."),
            user("Change of plan: the deploy port is 8080."),
            assistant("Noted."),
            user("Which deploy port should I use?"),
        ]
    )
    assert "8080" in reply.content
    assert "5432" not in reply.content


# -- memory retrieval ------------------------------------------------------------------------


def rows_with_secret() -> str:
    rows = [json.dumps({"row": i, "service": "checkout", "status": "ok"}) for i in range(60)]
    rows.insert(30, SECRET)
    return "\n".join(rows)


LISTINGS = ["message", "tool"]


def headtail_window(question: str, listing: str = "message"):
    """A headtail window whose tool output's middle (with the secret) is in
    memory; the memory listing (in a "Memory index" message, or in the tool's
    description) previews it."""
    strategy = HeadTailStrategy(listing=listing)
    for message in [
        user("Show me yesterday's rows."),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "query", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "query", "content": rows_with_secret()},
        assistant("Those are all the rows."),
        user(question),
    ]:
        strategy.add(message)
    window = strategy.window()
    # The premise: only the memory, and its preview in the listing, have it.
    listing_text = listing_of(window)
    visible = [m.get("content") or "" for m in window.messages if m.get("content") != listing_text]
    assert "secret-9981" in listing_text
    assert not any("secret-9981" in text for text in visible)
    return window


def listing_of(window) -> str:
    """The text that lists the stored memories: the index message, else the tool's description."""
    index = [m["content"] for m in window.messages if str(m.get("content")).startswith(INDEX_INTRO)]
    if index:
        (text,) = index
        return text
    (tool,) = window.tools
    return tool["function"]["description"]


@pytest.mark.parametrize("listing", LISTINGS)
def test_retrieves_memory_when_a_preview_covers_the_question(listing):
    window = headtail_window("What is SPECIAL_API_KEY?", listing)
    reply = respond(window.messages, window.tools)
    (call,) = reply.tool_calls
    assert call["function"]["name"] == "retrieve_memory"
    memory_id = json.loads(call["function"]["arguments"])["id"]
    assert memory_id == "m1"

    # Answer the call the way the harness does; then the oracle answers from it.
    messages = [
        *window.messages,
        {"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": "retrieve_memory",
            "content": window.tool_handler("retrieve_memory", {"id": memory_id}),
        },
    ]
    final = respond(messages, window.tools)
    assert final.tool_calls == []
    assert "secret-9981" in final.content


def test_does_not_retrieve_without_the_tool():
    # The listing in the tool's description goes with the tool: nothing shows the secret.
    window = headtail_window("What is SPECIAL_API_KEY?", "tool")
    reply = respond(window.messages, None)
    assert reply.tool_calls == []
    assert "secret-9981" not in (reply.content or "")


def test_without_the_tool_an_index_message_is_plain_text_it_answers_from():
    # The messages still hold the index; with no tool to call, the preview is
    # simply text it was sent, and it answers from it.
    window = headtail_window("What is SPECIAL_API_KEY?", "message")
    reply = respond(window.messages, None)
    assert reply.tool_calls == []
    assert "secret-9981" in (reply.content or "")


INDEX_MESSAGE = user(
    INDEX_INTRO + "\n"
    "id=m1 | position 2 | messages 1 | preview: rows 1 to 60 … SPECIAL_API_KEY = 'secret-9981'"
)
OTHER_TOOL = {
    "type": "function",
    "function": {"name": "query", "description": "Run a query.", "parameters": {}},
}


@pytest.mark.parametrize(
    ("tools", "retrieves"),
    [
        ([retrieve_tool("Retrieve text from memory by its id.")], True),
        ([OTHER_TOOL, retrieve_tool("Retrieve text from memory by its id.")], True),
        ([OTHER_TOOL], False),
        (None, False),
    ],
    ids=["retrieve_memory", "with-another-tool", "another-tool-only", "no-tools"],
)
def test_memory_index_previews_trigger_retrieval_only_with_the_retrieve_tool(tools, retrieves):
    messages = [user("Show me the rows."), assistant("Done."), INDEX_MESSAGE, user(QUESTION)]
    reply = respond(messages, tools)
    if retrieves:
        (call,) = reply.tool_calls
        assert call["function"]["name"] == "retrieve_memory"
        assert json.loads(call["function"]["arguments"]) == {"id": "m1"}
    else:
        assert reply.tool_calls == []
        assert "secret-9981" in (reply.content or "")  # read as text it was sent


def test_a_listing_line_outside_a_memory_index_message_is_not_a_memory():
    # Only headtail's index (or the tool's description) lists memories: the
    # same line in another message is just text, not something to fetch.
    pasted = user("Here is a log line: " + INDEX_MESSAGE["content"].split("\n", 1)[1])
    tools = [retrieve_tool("Retrieve text from memory by its id.")]
    reply = respond([pasted, assistant("Ok."), user(QUESTION)], tools)
    assert reply.tool_calls == []


@pytest.mark.parametrize("listing", LISTINGS)
def test_does_not_retrieve_when_the_answer_is_visible(listing):
    window = headtail_window("Which rows from yesterday?", listing)
    reply = respond(window.messages, window.tools)
    assert reply.tool_calls == []


@pytest.mark.parametrize("listing", LISTINGS)
def test_does_not_retrieve_the_same_memory_twice(listing):
    window = headtail_window("What is SPECIAL_API_KEY?", listing)
    call = respond(window.messages, window.tools).tool_calls[0]
    messages = [
        *window.messages,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        # A useless result: asking again for the same id would loop forever.
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": "retrieve_memory",
            "content": "(empty)",
        },
    ]
    reply = respond(messages, window.tools)
    assert reply.tool_calls == []
    assert reply.content


# -- tasks follow the visible instructions ---------------------------------------------------------

TASK = "Write a function that downloads a URL."
RULE = "Never use the requests library; always use urllib3."


def test_a_task_follows_the_visible_instructions_without_quoting_them():
    # The rules show only in what the code imports: an expectation such as
    # `regex: urllib3` must not pass on an echo of the rule or the task.
    reply = respond([user(f"Hello. {RULE}"), assistant("Understood."), user(TASK)])
    assert "import urllib3" in reply.content
    assert "import requests" not in reply.content
    assert "Never" not in reply.content and "requests" not in reply.content
    assert "download" not in reply.content.lower()


def test_a_rule_the_oracle_cannot_read_is_not_echoed_into_the_answer():
    rule = "Only urllib3 is approved here; the requests package is banned."
    reply = respond([user(rule), assistant("Understood."), user(TASK)])
    assert "import requests" in reply.content  # it did not follow the rule...
    assert "urllib3" not in reply.content  # ...so nothing in the answer says urllib3


@pytest.mark.parametrize(
    "rule",
    [
        "Never use requests; use urllib3.",
        "Never use requests. Use urllib3.",
        "Don't use requests, use urllib3 instead.",
        "Use urllib3, not requests.",
        "Use urllib3 instead of requests.",
        "Do not use the requests library, but use urllib3.",
    ],
)
def test_a_task_follows_each_wording_of_a_library_rule(rule):
    reply = respond([user(f"House rules. {rule}"), assistant("Understood."), user(TASK)])
    assert "import urllib3" in reply.content
    assert "import requests" not in reply.content


def test_a_bare_use_sentence_without_a_rule_before_it_requires_nothing():
    said = "Do not reply in French. Use short sentences."
    reply = respond([user(said), assistant("OK."), user(TASK)])
    assert "import short" not in reply.content
    assert "import requests" in reply.content


def test_a_task_without_visible_instructions_takes_the_obvious_route():
    reply = respond([user("Hello."), assistant("Hi."), user(TASK)])
    assert "Never use" not in reply.content
    assert "urllib3" not in reply.content
    assert "import requests" in reply.content


def test_only_the_users_and_system_instructions_count():
    reply = respond([user("Hello."), assistant("I will always use httpx from now on."), user(TASK)])
    assert "httpx" not in reply.content


def test_a_rule_shown_in_a_memory_preview_is_followed():
    # headtail lists an earlier chat's transcript as a memory; its preview shows the rule.
    tool = retrieve_tool(
        "Stored memories:\nid=m1 | position 0 | messages 8 | preview: user: House rules. " + RULE
    )
    reply = respond([user("New task today."), assistant("Ready."), user(TASK)], [tool])
    assert reply.tool_calls == []
    assert "import urllib3" in reply.content
    assert "import requests" not in reply.content


# -- tool calls and tool definitions are context --------------------------------------------------


def write_file_call(arguments: str) -> dict[str, Any]:
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


SETTINGS = json.dumps({"path": "settings.py", "content": "STAGING_PORT = 5433"})


def test_answers_from_tool_call_arguments():
    question = user("What is STAGING_PORT?")
    said = [user("Put the staging port in the settings."), write_file_call(SETTINGS)]
    assert "STAGING_PORT = 5433" in respond([*said, question]).content
    assert respond([said[0], question]).content == NO_ANSWER


def test_reads_tool_call_arguments_that_are_not_json_whole():
    reply = respond([write_file_call("STAGING_PORT = 5433 (raw)"), user("What is STAGING_PORT?")])
    assert "5433" in reply.content


def test_answers_from_a_tool_definition():
    tool = {
        "type": "function",
        "function": {
            "name": "deploy",
            "description": "Deploys the app. The deploy region is eu-west-3.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    question = user("Which deploy region is it?")
    assert "eu-west-3" in respond([user("Hi."), question], [tool]).content
    assert respond([user("Hi."), question]).content == NO_ANSWER


def test_a_summary_keeps_facts_from_tool_call_arguments():
    summary = summarise([user("Set it up."), write_file_call(SETTINGS)])
    assert "STAGING_PORT = 5433" in summary


# -- recency: the latest statement of the same question wins ---------------------------------------


def test_the_latest_statement_wins_over_a_wordier_older_one():
    reply = respond(
        [
            user("The staging database listens on port 5432."),
            assistant("Noted."),
            user("Update: staging moved to port 5433."),
            assistant("Noted."),
            user("Which port does the staging database use?"),
        ]
    )
    assert "5433" in reply.content
    assert "5432" not in reply.content


def test_a_later_statement_about_another_thing_does_not_win():
    reply = respond(
        [
            user("The billing service timeout is 45 seconds."),
            user("The accounts service timeout is 8 seconds."),
            assistant("Noted both."),
            user("What is the billing service timeout?"),
        ]
    )
    assert "45 seconds" in reply.content
    assert "8 seconds" not in reply.content


def test_a_later_sentence_sharing_one_word_does_not_win():
    reply = respond(
        [
            user("The launch code is ZEBRA-42."),
            user("We launch on Friday."),
            user("What is the launch code?"),
        ]
    )
    assert "ZEBRA-42" in reply.content
    assert "Friday" not in reply.content


# -- through litellm -----------------------------------------------------------------------------


def completion(litellm, model: str, messages: list[dict[str, Any]], **kw: Any) -> Any:
    return litellm.completion(model=model, messages=messages, **kw).choices[0].message


@pytest.mark.parametrize("listing", LISTINGS)
def test_oracle_through_litellm_calls_the_tool(litellm, listing):
    window = headtail_window("What is SPECIAL_API_KEY?", listing)
    message = completion(litellm, "ctxeval/oracle", window.messages, tools=window.tools)
    assert [c.function.name for c in message.tool_calls] == ["retrieve_memory"]


def lim_messages() -> list[dict[str, Any]]:
    documents = [f"Document {i}: the code for item {i} is CODE-{i:03d}." for i in range(1, 21)]
    return [
        user("\n".join(documents)),
        assistant("Read them."),
        user("What is the code for item 10?"),
    ]


def test_lost_in_middle_is_deterministic(litellm):
    answers = {
        completion(litellm, "ctxeval/lost-in-middle", lim_messages()).content for _ in range(3)
    }
    assert len(answers) == 1


@pytest.mark.parametrize(
    "position, accuracy",
    [(0.0, 75.8), (4 / 19, 57.2), (9 / 19, 53.8), (14 / 19, 55.4), (1.0, 63.2)],
)
def test_lost_in_middle_follows_liu_et_al(position, accuracy):
    assert lost_in_middle_probability(position) == pytest.approx(accuracy / 88.3)


def test_lost_in_middle_is_lowest_in_the_middle():
    points = [i / 100 for i in range(101)]
    curve = [lost_in_middle_probability(x) for x in points]
    lowest = points[curve.index(min(curve))]
    assert 0.4 < lowest < 0.6
    assert curve[0] > curve[-1] > min(curve)
    assert lost_in_middle_probability(-1) == curve[0] and lost_in_middle_probability(2) == curve[-1]


def test_lost_in_middle_attention_draws_follow_the_curve():
    attend = lost_in_middle_attention("What is the code?")
    sentences = [f"Sentence number {i} of the test." for i in range(2000)]
    for position in (0.0, 0.5, 1.0):
        rate = sum(attend(position, s) for s in sentences) / len(sentences)
        assert rate == pytest.approx(lost_in_middle_probability(position), abs=0.04)
    # Seeded: the same draw for the same sentence, every time.
    assert [attend(0.5, s) for s in sentences[:50]] == [attend(0.5, s) for s in sentences[:50]]


def test_echo_returns_its_input(litellm):
    message = completion(
        litellm, "ctxeval/echo", [{"role": "system", "content": "Be terse."}, user("hello there")]
    )
    assert message.content == "system: Be terse.\nuser: hello there"


def test_texts_without_a_question_word_are_passed_over_whole_with_the_same_answers():
    from pytest_ctxeval.llm import oracle
    from pytest_ctxeval.llm.oracle_ranking import Candidate, question_fragments
    from pytest_ctxeval.llm.text import terms

    log = "\n".join(f"12:{i:02d} INFO worker: queue drained in {i} ms." for i in range(60))
    context = [
        user("The staging database listens on port 5432."),
        {"role": "tool", "tool_call_id": "c1", "content": log},
        assistant("Update: the staging database moved to port 5433. Noted."),
    ]
    candidates = oracle._candidates(context, [])
    fragments = question_fragments(set(terms("Which port does the staging database use?")))
    every = [
        Candidate(text, position)
        for position, text in enumerate(
            s for m in context for s in oracle._text_candidates(m["content"])
        )
    ]
    expected = [(c.text, c.position) for c in every if c.may_share(fragments)]
    assert [(c.text, c.position) for c in candidates.sharing(fragments)] == expected
    assert len(candidates) == len(every) > 60  # positions still count the log's lines
    question = user("Which port does the staging database use?")
    assert "5433" in (respond([*context, question]).content or "")
