"""Scenario YAML -> concrete sessions: errors with file:line:column, planting of
needles and constraints, tool calls, generators."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from inline_scenarios import PATH, only_error, parse_inline

from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.errors import ScenarioError, ScenarioWarning

PROBE = 'probes:\n  - {id: p, user: "What now?"}\n'


def load(text: str) -> list[Conversation]:
    """Parse a scenario written inline; one without probes gets a default probe."""
    return parse_inline(text, default_probes=PROBE)


def load_one(text: str) -> Conversation:
    (conversation,) = load(text)
    return conversation


def error(text: str) -> str:
    return only_error(text, default_probes=PROBE)


def session(conversation: Conversation) -> list[dict[str, Any]]:
    """The messages without the system prompt."""
    return [m for m in conversation.messages if m["role"] != "system"]


# -- errors name the place --------------------------------------------------------------


@pytest.mark.parametrize(
    "text, where, message",
    [
        pytest.param(
            """
            id: s
            descripton: A typo at the top level.
            """,
            "2:1",
            "unknown key 'descripton' in scenario; expected one of: id, description,",
            id="scenario",
        ),
        pytest.param(
            """
            id: s
            turns:
              - tool: {name: query, outptu: rows}
            """,
            "3:25",
            "unknown key 'outptu' in turns[0].tool; expected one of: name, args, output, generate",
            id="turn-tool",
        ),
        pytest.param(
            """
            id: s
            turns:
              - user: hi
            needles:
              - {id: n, text: x, turn: 1, answr: y}
            """,
            "5:31",
            "unknown key 'answr' in needles[0]; expected one of: id, text, question, answer,",
            id="needle",
        ),
        pytest.param(
            """
            id: s
            turns:
              - user: hi
            probes:
              - id: p
                user: What now?
                expect:
                  contains: x
                  contans: y
            """,
            "9:7",
            "unknown key 'contans' in probes[0].expect; expected one of: contains, contains_any,",
            id="probe-expect",
        ),
        pytest.param(
            """
            id: s
            turns:
              - user: hi
              - generate: {kind: chitchat, turn: 3}
            """,
            "4:32",
            "unknown key 'turn' in turns[1].generate; expected one of: kind, seed, turns,",
            id="turn-generate",
        ),
    ],
)
def test_unknown_keys_are_named_at_their_line_and_column(text, where, message):
    found = error(text)
    assert found.startswith(f"{PATH}:{where}: ")
    assert message in found


def test_a_turn_with_two_kinds_is_an_error():
    text = """
        id: s
        turns:
          - user: hi
          - {user: a, assistant: b}
        """
    assert error(text) == (
        f"{PATH}:4:5: turns[1]: a turn needs exactly one of the keys "
        "user, assistant, tool, generate; got 'user', 'assistant'"
    )


def test_a_misspelt_turn_key_is_quoted():
    text = """
        id: s
        turns:
          - usr: hi
        """
    assert "'usr'" in error(text)


def test_duplicate_keys_are_an_error_at_the_second_one():
    text = """
        id: s
        turns:
          - user: hi
        id: t
        """
    assert error(text) == f"{PATH}:4:1: duplicate key 'id'"


def test_duplicate_keys_deep_inside_are_found_too():
    text = """
        id: s
        turns:
          - user: hi
        probes:
          - id: p
            user: What now?
            expect: {contains: a, contains: b}
        """
    assert error(text) == f"{PATH}:7:27: duplicate key 'contains'"


def test_a_bad_regex_is_an_error_at_the_regex():
    text = """
        id: s
        turns:
          - user: hi
        probes:
          - id: p
            user: What now?
            expect: {regex: "(unclosed"}
        """
    found = error(text)
    assert found.startswith(f"{PATH}:7:21: probes[0].expect.regex: invalid regular expression")
    assert "missing )" in found


@pytest.mark.parametrize(
    "place", ["{id: n, text: x, depth: 0.5, turn: 1}", "{id: n, text: x}"], ids=["both", "neither"]
)
def test_a_needle_needs_exactly_one_of_depth_and_turn(place):
    text = f"""
        id: s
        turns:
          - user: hi
        needles:
          - {place}
        """
    assert error(text) == (
        f"{PATH}:5:5: needles[0]: a needle needs exactly one of 'depth' (0..1) or 'turn' (1-based)"
    )


def test_duplicate_probe_ids_are_an_error():
    text = """
        id: s
        turns:
          - user: hi
        probes:
          - {id: p, user: first}
          - {id: p, user: second}
        """
    assert "duplicate probe id 'p'" in error(text)
    assert error(text).startswith(f"{PATH}:")


def test_duplicate_probe_ids_are_reported_at_the_second_probe():
    text = """
        id: s
        turns:
          - user: hi
        probes:
          - {id: p, user: first}
          - {id: p, user: second}
        """
    assert error(text).startswith(f"{PATH}:6:")


def test_several_problems_in_one_file_are_all_reported_in_line_order():
    with pytest.raises(ScenarioError) as info:
        load(
            """
            id: s
            turns:
              - tool: {name: q, outptu: x}
            probes:
              - {id: p, user: q, expect: {contans: y}}
            """
        )
    lines = [p.line for p in info.value.problems]
    assert lines == [3, 5]


# -- nothing vacuous passes ------------------------------------------------------------------

BLANK = "is empty once whitespace and end punctuation are ignored; expected the text to look for"


@pytest.mark.parametrize(
    "expect, at, message",
    [
        ('{contains: ""}', '""', f"probes[0].expect.contains: '' {BLANK}"),
        ('{contains: "   "}', '"', f"probes[0].expect.contains: '   ' {BLANK}"),
        ('{contains: "."}', '"', f"probes[0].expect.contains: '.' {BLANK}"),
        (
            "{equals: '\"\"'}",
            "'",
            "probes[0].expect.equals: '\"\"' is empty once whitespace, end punctuation and "
            "quotes are ignored; expected the text to look for",
        ),
        (
            '{regex: ""}',
            '"',
            "probes[0].expect.regex: empty pattern; expected a regular expression",
        ),
        (
            '{regex: ".*"}',
            '"',
            "probes[0].expect.regex: /.*/ matches even an empty answer; expected a pattern "
            "that needs some text to match",
        ),
        (
            '{not_regex: ""}',
            '"',
            "probes[0].expect.not_regex: empty pattern; expected a regular expression",
        ),
        (
            "{contains_any: []}",
            "[",
            "probes[0].expect.contains_any: empty list; expected at least one string",
        ),
        (
            "{contains_all: []}",
            "[",
            "probes[0].expect.contains_all: empty list; expected at least one string",
        ),
        (
            "{not_contains: []}",
            "[",
            "probes[0].expect.not_contains: empty list; expected at least one string",
        ),
        ('{not_contains: ""}', '"', f"probes[0].expect.not_contains: '' {BLANK}"),
        ('{contains_any: [peanut, " "]}', '" "', f"probes[0].expect.contains_any[1]: ' ' {BLANK}"),
        ('{contains_all: ["", peanut]}', '""', f"probes[0].expect.contains_all[0]: '' {BLANK}"),
    ],
)
def test_a_vacuous_expectation_is_an_error_at_its_value(expect, at, message):
    # The error points at the offending value: the first ``at`` in the line.
    line = f"    expect: {expect}"
    where = f"7:{line.index(at) + 1}"
    text = f"""
        id: s
        turns:
          - user: hi
        probes:
          - id: p
            user: What now?
            expect: {expect}
        """
    assert error(text) == f"{PATH}:{where}: {message}"


def test_a_blank_pattern_is_a_real_check():
    # "Use tabs" / "no tabs": whitespace is what these patterns look for.
    (probe,) = load_one(
        """
        id: s
        turns:
          - user: hi
        probes:
          - {id: p, user: "What now?", expect: {regex: "\\t", not_regex: "  $"}}
        """
    ).probes
    assert probe.expect is not None
    assert (probe.expect.regex, probe.expect.not_regex) == ("\t", "  $")


NEEDLE_TEXT = "For the record, the timeout is 150 ms and the vault code is 7-3-9-1."


@pytest.mark.parametrize(
    "answer, at, where, which",
    [
        ('"15"', "8:13", "needles[0].answer", "'15'"),
        ('["7-3-9-1", "7391"]', "8:25", "needles[0].answer[1]", "'7391'"),
    ],
)
def test_a_needle_answer_that_its_text_does_not_state_is_an_error(answer, at, where, which):
    found = error(
        f"""
        id: s
        turns:
          - user: hi
        needles:
          - id: n
            turn: 1
            text: "{NEEDLE_TEXT}"
            answer: {answer}
        """
    )
    assert found == (
        f"{PATH}:{at}: {where}: answer {which} does not occur in the needle's text "
        f"{NEEDLE_TEXT!r}; expected an answer the text states, so a model that quotes it passes"
    )


def test_a_needle_answer_is_found_in_its_text_as_answers_are_checked():
    # Case, thousands separators and end punctuation do not matter: the file
    # loads, and the needle is a fact with both answers.
    conversation = load_one(
        """
        id: s
        turns:
          - user: hi
        needles:
          - {id: n, turn: 1, text: "The VAULT holds 5,000 coins.", answer: [vault, "5000."]}
        """
    )
    (fact,) = [f for f in conversation.facts if f.id == "n"]
    assert fact.answers == ("vault", "5000.")


def test_a_needle_with_no_answers_is_an_error():
    text = """
        id: s
        turns:
          - user: hi
        needles:
          - {id: n, turn: 1, text: x, answer: []}
        """
    assert (
        error(text) == f"{PATH}:5:39: needles[0].answer: empty list; expected at least one answer"
    )


def scenario_warnings(text: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(text)
    assert all(w.category is ScenarioWarning for w in caught), [str(w.message) for w in caught]
    return [str(w.message) for w in caught]


REPEATS = "a model that merely repeats the question passes this check"


def test_an_expected_string_in_the_probes_own_question_is_a_warning_at_the_probe():
    found = scenario_warnings(
        """
        id: s
        turns:
          - user: The staging database listens on port 5,433.
        probes:
          - {id: ok, user: "Which port does staging use?", expect: {contains: "5433"}}
          - id: leak
            user: Is the staging port 5433 or 5432?
            expect: {contains_any: ["6543", "5,433"], contains_all: [staging, port]}
        """
    )
    question = "'Is the staging port 5433 or 5432?'"
    assert found == [
        f"{PATH}:6:5: probe 'leak': contains_any '5,433' already occurs in the question "
        f"{question}; {REPEATS}",
        f"{PATH}:6:5: probe 'leak': contains_all 'staging' already occurs in the question "
        f"{question}; {REPEATS}",
        f"{PATH}:6:5: probe 'leak': contains_all 'port' already occurs in the question "
        f"{question}; {REPEATS}",
    ]


def test_an_f1_answer_in_the_probes_own_question_is_a_warning():
    found = scenario_warnings(
        """
        id: s
        turns:
          - user: I moved to Lisbon in May.
        probes:
          - {id: leak, user: "Did you move to Lisbon?", expect: {f1: Lisbon}}
        """
    )
    assert found == [
        f"{PATH}:5:5: probe 'leak': f1 'Lisbon' already occurs in the question "
        f"'Did you move to Lisbon?'; {REPEATS}"
    ]


def test_a_needle_question_that_contains_its_answer_is_a_warning():
    found = scenario_warnings(
        """
        id: s
        turns:
          - user: hi
        needles:
          - {id: n, turn: 1, text: "My locker is 4417.", question: "Is it 4417?", answer: "4417"}
        probes:
          - {id: locker, needle: n}
        """
    )
    assert found == [
        f"{PATH}:7:5: probe 'locker': needle 'n' answer '4417' already occurs in the question "
        f"'Is it 4417?'; {REPEATS}"
    ]


def test_a_constraint_check_the_question_meets_is_a_warning():
    found = scenario_warnings(
        """
        id: s
        turns:
          - user: hi
        constraints:
          - {id: lib, text: "Always use urllib3.", check: {contains: urllib3}}
        probes:
          - {id: http, constraint: lib, user: Fetch a URL with urllib3.}
        """
    )
    assert found == [
        f"{PATH}:7:5: probe 'http': constraint 'lib' check contains 'urllib3' already occurs in "
        f"the question 'Fetch a URL with urllib3.'; {REPEATS}"
    ]


@pytest.mark.parametrize(
    "expect",
    [
        '{contains: "15"}',  # only as part of 150
        "{contains: Osprey, case_sensitive: true}",
        "{not_contains: staging}",  # only what a correct answer must contain counts
        "{regex: staging}",
    ],
)
def test_no_warning_when_the_question_does_not_give_the_answer_away(expect):
    text = f"""
        id: s
        turns:
          - user: hi
        probes:
          - {{id: p, user: "Is the staging osprey timeout 150 ms?", expect: {expect}}}
        """
    assert scenario_warnings(text) == []


def test_a_matrix_warns_once_for_a_probe_it_repeats():
    found = scenario_warnings(
        """
        id: s
        matrix: {turns: [1, 2, 3]}
        turns:
          - generate: {kind: chitchat, turns: "{{ turns }}", seed: 1}
        probes:
          - {id: p, user: "Is it teal?", expect: {contains: teal}}
        """
    )
    assert len(found) == 1


def test_a_warning_made_an_error_is_reported_like_any_problem():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScenarioWarning)
        found = error(
            """
            id: s
            turns:
              - user: hi
            probes:
              - {id: p, user: "Is it teal?", expect: {contains: teal}}
            """
        )
    assert found == (
        f"{PATH}:5:5: probe 'p': contains 'teal' already occurs in the question 'Is it teal?'; "
        f"{REPEATS}"
    )


def test_pytest_lists_the_warning_in_its_summary_and_skips_the_probe_as_uncheckable(ctx):
    ctx.scenario(
        "leak",
        """
        id: leak
        turns:
          - user: My favourite colour is teal.
          - assistant: Noted.
        probes:
          - {id: colour, user: "Is my favourite colour teal?", expect: {contains: teal}}
        """,
    )
    result = ctx.run("--ctx-strategy=full")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*warnings summary*",
            "*scenarios/leak.yaml:6: ScenarioWarning: scenarios/leak.yaml:6:5: probe 'colour': "
            "contains 'teal' already occurs in the question*",
            "*1 skipped, 1 warning*",
        ]
    )


# -- planting -------------------------------------------------------------------------------

FILLER = "A plain remark about nothing in particular. " * 4


def test_a_needle_by_turn_lands_in_that_message():
    conversation = load_one(
        f"""
        id: s
        system: You are helpful.
        turns:
          - user: "{FILLER}"
          - assistant: "{FILLER}"
          - user: "{FILLER}"
        needles:
          - {{id: n, turn: 2, text: "The vault code is 7781."}}
        """
    )
    messages = session(conversation)
    holders = [
        i for i, m in enumerate(messages) if "The vault code is 7781." in (m["content"] or "")
    ]
    assert holders == [1]  # turn 2 = the second session message (the system prompt is not a turn)
    assert messages[1]["role"] == "assistant"
    # Planted in the middle, at a sentence boundary, the original text kept.
    content = messages[1]["content"]
    assert content.replace("The vault code is 7781. ", "") == FILLER
    assert 0 < content.index("The vault") < len(content) - len("The vault code is 7781. ")


def test_a_needle_by_depth_lands_inside_the_long_tool_output():
    rows = "\n".join(json.dumps({"row": i, "status": "ok"}) for i in range(200))
    conversation = load_one(
        """
        id: s
        turns:
          - user: Show me the rows.
          - tool: {name: query, output: ROWS}
          - assistant: Those are all the rows.
        needles:
          - {id: n, depth: 0.5, text: "SPECIAL_API_KEY = 'secret-9981'"}
        """.replace("ROWS", json.dumps(rows))
    )
    messages = session(conversation)
    tool = next(m for m in messages if m["role"] == "tool")
    content = tool["content"]
    at = content.index("SPECIAL_API_KEY = 'secret-9981'")
    # Inside, not at either end, on a line of its own; every row still there.
    assert 0.3 < at / len(content) < 0.7
    assert "\nSPECIAL_API_KEY = 'secret-9981'\n" in content
    assert content.replace("SPECIAL_API_KEY = 'secret-9981'\n", "") == rows
    others = [m for m in messages if m is not tool]
    assert all("SPECIAL_API_KEY" not in (m["content"] or "") for m in others)


@pytest.mark.parametrize("depth, role", [(0.0, "user"), (1.0, "assistant")])
def test_depth_zero_and_one_are_the_first_and_last_message(depth, role):
    conversation = load_one(
        f"""
        id: s
        turns:
          - user: "{FILLER}"
          - assistant: "{FILLER}"
          - user: "{FILLER}"
          - assistant: "{FILLER}"
        needles:
          - {{id: n, depth: {depth}, text: "The vault code is 7781."}}
        """
    )
    messages = session(conversation)
    index = 0 if depth == 0.0 else len(messages) - 1
    assert "The vault code is 7781." in messages[index]["content"]
    assert messages[index]["role"] == role
    assert sum("7781" in m["content"] for m in messages) == 1


def test_a_constraint_joins_the_user_message_at_or_before_its_turn():
    conversation = load_one(
        """
        id: s
        turns:
          - user: First question.
          - assistant: First answer.
          - user: Second question.
          - assistant: Second answer.
        constraints:
          - {id: c, at_turn: 4, text: "Never use the requests library."}
        """
    )
    messages = session(conversation)
    assert messages[2] == {
        "role": "user",
        "content": "Second question.\nNever use the requests library.",
    }
    assert [m["content"] for m in messages[:2]] == ["First question.", "First answer."]


# -- tool calls -----------------------------------------------------------------------------


def test_a_bare_tool_output_gets_a_synthesised_assistant_call():
    conversation = load_one(
        """
        id: s
        turns:
          - user: hi
          - tool: {name: query, args: {day: monday}, output: "rows"}
          - tool: {name: fetch, output: "page"}
        """
    )
    messages = session(conversation)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]
    for call_message, result in ((messages[1], messages[2]), (messages[3], messages[4])):
        (call,) = call_message["tool_calls"]
        assert call["type"] == "function"
        assert call["function"]["name"] == result["name"]
        assert result["tool_call_id"] == call["id"]
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == {"day": "monday"}
    assert messages[1]["tool_calls"][0]["id"] != messages[3]["tool_calls"][0]["id"]
    assert messages[2]["content"] == "rows"


def test_a_tool_output_answers_the_assistant_call_before_it():
    conversation = load_one(
        """
        id: s
        turns:
          - user: hi
          - assistant: Let me look.
            tool_calls: [{id: abc, name: fetch, args: {url: "https://example.org"}}]
          - tool: {name: fetch, output: "page"}
        """
    )
    messages = session(conversation)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["id"] == "abc"
    assert messages[2]["tool_call_id"] == "abc"


# -- generators -----------------------------------------------------------------------------

GENERATED = """
    id: s
    turns:
      - generate: {kind: chitchat, turns: 5, seed: SEED}
      - tool: {name: query, generate: {kind: json_rows, rows: 20, seed: SEED}}
"""


def generated(seed: int) -> list[dict[str, Any]]:
    return session(load_one(GENERATED.replace("SEED", str(seed))))


def test_generators_are_deterministic_per_seed():
    first = generated(1)
    assert first == generated(1)
    assert len(first) == 5 * 2 + 2  # 5 user/assistant pairs, then a call and its result
    assert first != generated(2)
    assert first[-1]["content"] != generated(2)[-1]["content"]
    assert [m["content"] for m in first[:10]] != [m["content"] for m in generated(2)[:10]]
