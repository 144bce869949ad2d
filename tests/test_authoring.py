"""Authoring features of the scenario format (docs/authoring.md): matrix grids,
templates, includes, multi-session chats, split constraints, needles by role,
Python checks, the oracle's code and the generators."""

from __future__ import annotations

import json
import re
import textwrap
import typing
from pathlib import Path
from typing import Any

import pytest
from inline_scenarios import PATH, only_error, parse_inline

from pytest_ctxeval.evaluate.code_checks import check_python, imported_modules
from pytest_ctxeval.evaluate.scoring import check_answer
from pytest_ctxeval.evaluate.simulate import simulate
from pytest_ctxeval.evaluate.survival import fact_survival
from pytest_ctxeval.llm.oracle import respond
from pytest_ctxeval.llm.tokens import count_text_tokens
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.errors import ScenarioError
from pytest_ctxeval.scenario.generators import (
    GenerateSpec,
    GeneratorKind,
    generate_text,
    generate_turns,
)
from pytest_ctxeval.scenario.loader import load_conversations, parse_conversations
from pytest_ctxeval.scenario.schema import Expectation, PythonCheck
from pytest_ctxeval.strategies.base import BaseStrategy, Window
from pytest_ctxeval.strategies.full import FullStrategy
from pytest_ctxeval.strategies.headtail import INDEX_INTRO, HeadTailStrategy
from pytest_ctxeval.strategies.sliding import SlidingStrategy

MODEL = "ctxeval/oracle"


load = parse_inline
error = only_error


def load_one(text: str) -> Conversation:
    (conversation,) = load(text)
    return conversation


def write(base: Path, relpath: str, text: str) -> Path:
    path = base / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m.get("content") or "" for m in messages]


# -- 1. matrix expansion -------------------------------------------------------------------

GRID = """
    id: grid
    matrix:
      depth: [0.1, 0.5, 0.9]
      turns: [10, 20, 50]
    turns:
      - generate: {kind: chitchat, turns: "{{ turns }}", seed: 1}
    needles:
      - {id: code, depth: "{{ depth }}", role: user, text: "The vault code is 7-3-9-1.",
         question: "What is the vault code?", answer: "7-3-9-1"}
    probes:
      - {id: code, needle: code}
"""


@pytest.fixture(scope="module")
def grid() -> list[Conversation]:
    return load(GRID)


def test_a_matrix_expands_into_every_combination_in_the_order_written(grid):
    assert [c.id for c in grid] == [
        f"grid-depth-{depth}-turns-{turns}" for depth in (0.1, 0.5, 0.9) for turns in (10, 20, 50)
    ]
    assert [c.matrix for c in grid] == [
        {"depth": depth, "turns": turns} for depth in (0.1, 0.5, 0.9) for turns in (10, 20, 50)
    ]


def test_matrix_values_render_with_their_types(grid):
    for conversation in grid:
        users = [m for m in conversation.messages if m["role"] == "user"]
        # "{{ turns }}" is the int the generator needs: that many exchanges.
        assert len(users) == conversation.matrix["turns"], conversation.id
        depth = conversation.scenario.needles[0].depth
        assert isinstance(depth, float) and depth == conversation.matrix["depth"]


def test_a_deeper_needle_lands_later_in_the_session(grid):
    def needle_index(conversation: Conversation) -> int:
        (index,) = [i for i, m in enumerate(conversation.messages) if "7-3-9-1" in m["content"]]
        return index

    fifty = [c for c in grid if c.matrix["turns"] == 50]
    indexes = [needle_index(c) for c in fifty]
    assert indexes == sorted(indexes) and len(set(indexes)) == 3, indexes
    assert indexes[0] < 100 * 0.25 and indexes[-1] > 100 * 0.75


@pytest.mark.parametrize(
    "matrix, where, message",
    [
        pytest.param(
            "matrix: [0.1, 0.5]", "2:9", "'matrix' must map names to lists of values", id="list"
        ),
        pytest.param(
            "matrix: {}", "2:9", "'matrix' must map names to lists of values", id="empty-map"
        ),
        pytest.param(
            "matrix:\n  depth: []",
            "3:10",
            "matrix 'depth' must be a non-empty list",
            id="empty-list",
        ),
        pytest.param(
            "matrix:\n  depth: 0.5", "3:10", "matrix 'depth' must be a non-empty list", id="scalar"
        ),
    ],
)
def test_a_bad_matrix_is_an_error_at_its_line(matrix, where, message):
    text = f"id: g\n{matrix}\nturns: [{{user: hi}}]\nprobes: [{{id: p, user: q}}]\n"
    with pytest.raises(ScenarioError) as info:
        parse_conversations(text, PATH)
    assert str(info.value) == f"{PATH}:{where}: {message}"


# -- 2. vars and templates -----------------------------------------------------------------

VARS_EVERYWHERE = """
    id: "{{ service }}-check"
    vars: {service: billing, port: 5433}
    system: "You watch the {{ service }} service."
    turns:
      - user: "Check the {{ service }} logs."
      - tool: {name: logs, output: "{{ service }} listens on {{ port }}"}
      - assistant: "The {{ service|upper }} logs are clean."
    needles:
      - {id: n, turn: 1, text: "Owner of {{ service }}: Ada.", question: "Who owns {{ service }}?",
         answer: "Ada"}
    probes:
      - id: port
        user: "Which port does {{ service }} use?"
        expect: {contains: "port {{ port }}"}
      - {id: owner, needle: n}
"""


def test_vars_render_in_every_string():
    conversation = load_one(VARS_EVERYWHERE)
    assert conversation.id == "billing-check"
    system, user, call, tool, reply = conversation.messages
    assert system["content"] == "You watch the billing service."
    assert "Check the" in user["content"] and "billing logs." in user["content"]
    assert "Owner of billing: Ada." in user["content"]
    assert call["tool_calls"][0]["function"]["name"] == "logs"
    assert tool["content"] == "billing listens on 5433"
    assert reply["content"] == "The BILLING logs are clean."
    port, owner = conversation.probes
    assert port.question == "Which port does billing use?"
    assert port.expect is not None and port.expect.contains == "port 5433"
    assert owner.question == "Who owns billing?"
    assert "{{" not in json.dumps(conversation.messages)


@pytest.mark.parametrize(
    "turn, column",
    [
        pytest.param('  - user: "{{ servce }}"', 11, id="whole-string"),
        pytest.param('  - user: "Check the {{ servce }} logs."', 11, id="inside-text"),
    ],
)
def test_an_undefined_variable_is_an_error_at_its_string(turn, column):
    head = "id: s\nvars: {service: billing}\nturns:\n  - assistant: Hi.\n"
    text = f"{head}{turn}\nprobes: [{{id: p, user: q}}]\n"
    with pytest.raises(ScenarioError) as info:
        parse_conversations(text, PATH)
    message = str(info.value)
    assert message.startswith(f"{PATH}:5:{column}: ")
    assert "'servce' is undefined" in message


def test_without_vars_or_matrix_text_is_taken_literally():
    # Templating is opt-in (docs/authoring.md section 7): pasted transcripts and
    # tool outputs with {{ }} in them (Helm, Jinja) need no escaping.
    (conversation,) = parse_conversations(
        textwrap.dedent(
            """
            id: s
            turns:
              - user: "Check the {{ service }} logs."
            probes: [{id: p, user: q}]
            """
        ),
        PATH,
    )
    assert conversation.messages[0]["content"] == "Check the {{ service }} logs."


def test_empty_vars_turn_templating_on():
    assert "'service' is undefined" in error(
        """
        id: s
        vars: {}
        turns:
          - user: "Check the {{ service }} logs."
        probes: [{id: p, user: q}]
        """
    )


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "before {{ ''.__class__.__mro__[1].__subclasses__() }} after",
    ],
)
def test_the_sandbox_blocks_access_to_python_internals(template):
    text = f'id: s\nvars: {{x: 1}}\nturns:\n  - user: "{template}"\nprobes: [{{id: p, user: q}}]\n'
    with pytest.raises(ScenarioError) as info:
        parse_conversations(text, PATH)
    message = str(info.value)
    assert message.startswith(f"{PATH}:4:11: template error: ")
    assert "access to attribute '__class__' of 'str' object is unsafe" in message


# -- 3. !include ---------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project with shared fragments; returns its ``scenarios/`` root."""
    root = tmp_path / "scenarios"
    write(root, "_shared/system.txt", "You are the release assistant.\n")
    write(
        root,
        "_shared/turns.yaml",
        """
        - user: The staging database listens on port 5433.
        - assistant: Noted.
        - user: !include parts/ask.txt
        """,
    )
    write(root, "_shared/parts/ask.txt", "Please also check the billing logs.")
    write(
        root,
        "_shared/tool.yaml",
        """
        name: read_config
        output: "retries = 7"
        """,
    )
    write(tmp_path, "outside.txt", "secret from outside the root")
    return root


def test_include_text_data_and_nested_includes(tree):
    path = write(
        tree,
        "release.yaml",
        """
        id: release
        system: !include _shared/system.txt
        turns: !include _shared/turns.yaml
        probes: [{id: p, user: q}]
        """,
    )
    (conversation,) = load_conversations(path, root=tree)
    assert conversation.messages == [
        {"role": "system", "content": "You are the release assistant.\n"},
        {"role": "user", "content": "The staging database listens on port 5433."},
        {"role": "assistant", "content": "Noted."},
        # _shared/turns.yaml includes parts/ask.txt relative to itself.
        {"role": "user", "content": "Please also check the billing logs."},
    ]


def test_include_a_tool_output_mapping(tree):
    path = write(
        tree,
        "config.yaml",
        """
        id: config
        turns:
          - user: Read the config.
          - tool: !include _shared/tool.yaml
        probes: [{id: p, user: q}]
        """,
    )
    (conversation,) = load_conversations(path, root=tree)
    tool = conversation.messages[-1]
    assert (tool["role"], tool["name"], tool["content"]) == ("tool", "read_config", "retries = 7")


def test_include_from_a_subfolder_may_reach_a_sibling_inside_the_root(tree):
    path = write(
        tree,
        "team/a.yaml",
        """
        id: a
        system: !include ../_shared/system.txt
        turns: [{user: hi}]
        probes: [{id: p, user: q}]
        """,
    )
    (conversation,) = load_conversations(path, root=tree)
    assert conversation.messages[0]["content"] == "You are the release assistant.\n"


@pytest.mark.parametrize(
    "target, message",
    [
        pytest.param(
            "../outside.txt", "!include '../outside.txt' leaves the scenario root", id="outside"
        ),
        pytest.param(
            "_shared/missing.txt", "!include '_shared/missing.txt': no such file", id="missing"
        ),
    ],
)
def test_a_bad_include_is_an_error_at_its_line(tree, target, message):
    path = write(
        tree,
        "bad.yaml",
        f"""
        id: bad
        turns:
          - user: hi
          - assistant: !include {target}
        probes: [{{id: p, user: q}}]
        """,
    )
    with pytest.raises(ScenarioError) as info:
        load_conversations(path, display_path="scenarios/bad.yaml", root=tree)
    assert str(info.value).startswith(f"scenarios/bad.yaml:4:16: {message}")
    assert "secret" not in str(info.value)


def test_a_bad_include_inside_an_included_file_names_that_file(tree):
    write(tree, "_shared/broken.yaml", "- user: !include nowhere.txt\n")
    path = write(
        tree, "b.yaml", "id: b\nturns: !include _shared/broken.yaml\nprobes: [{id: p, user: q}]\n"
    )
    with pytest.raises(ScenarioError) as info:
        load_conversations(path, root=tree)
    assert str(info.value) == (
        f"{tree / '_shared' / 'broken.yaml'}:1:9: !include 'nowhere.txt': no such file"
    )


def test_shared_fragments_are_not_collected_while_the_scenario_using_them_runs(ctx, xdist_args):
    ctx.write("scenarios/_shared/system.txt", "You are the release assistant.\n")
    # Not a scenario: collected on its own it would be an error.
    ctx.write(
        "scenarios/_shared/facts.yaml",
        """
        - user: The staging database listens on port 5433.
        - assistant: Noted.
        """,
    )
    ctx.scenario(
        "release",
        """
        id: release
        system: !include _shared/system.txt
        turns: !include _shared/facts.yaml
        probes:
          - id: port
            user: Which port does the staging database listen on?
            expect: {contains: "5433"}
        """,
    )
    result = ctx.run("--ctx-strategy=full", *xdist_args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)
    (record,) = ctx.results()
    assert record["scenario"] == "release"
    assert "5433" in record["answer"]


# -- 4. multi-session ----------------------------------------------------------------------

TWO_CHATS = """
    id: chats
    system: You are a personal assistant.
    sessions:
      - label: monday
        turns:
          - user: My daughter Leona is allergic to peanuts.
          - assistant: Noted, no peanuts.
      - label: friday
        turns:
          - user: Hi again.
          - assistant: Welcome back!
    probes:
      - {id: allergy, user: "Which food is Leona allergic to?", expect: {contains: peanut}}
"""

THREE_CHATS = TWO_CHATS.replace(
    "    probes:",
    "      - label: sunday\n        turns:\n          - user: Third chat.\n"
    "          - assistant: Hello.\n    probes:",
)


def test_sessions_mark_where_each_chat_starts():
    conversation = load_one(TWO_CHATS)
    assert conversation.session_starts == [3]
    assert conversation.messages[3] == {"role": "user", "content": "Hi again."}
    assert load_one(THREE_CHATS).session_starts == [3, 5]


def test_turns_and_sessions_together_is_an_error():
    message = error(
        """
        id: both
        turns:
          - user: hi
        sessions:
          - turns: [{user: again}]
        probes: [{id: p, user: q}]
        """
    )
    assert message == (
        f"{PATH}:5:3: sessions: use either 'turns' (one chat) or 'sessions' (several), not both"
    )


class RecordingStrategy(BaseStrategy):
    name = "recording"

    def __init__(self) -> None:
        super().__init__()
        self.ended: list[str] = []  # the last message of each chat that ended

    def end_session(self) -> None:
        self.ended.append(self.history[-1]["content"])
        super().end_session()

    def window(self) -> Window:
        return Window(messages=list(self.history))


@pytest.mark.parametrize("text, ended", [(TWO_CHATS, 1), (THREE_CHATS, 2)])
def test_end_session_is_called_once_per_new_chat(text, ended):
    strategy = RecordingStrategy()
    simulate(load_one(text), strategy, client=None, model=MODEL)
    assert strategy.ended == ["Noted, no peanuts.", "Welcome back!"][:ended]


def test_single_chat_never_ends_a_session():
    strategy = RecordingStrategy()
    one_chat = """
        id: one
        turns:
          - user: Hello.
          - assistant: Hi.
          - user: Again.
          - assistant: Yes.
        probes: [{id: p, user: q}]
    """
    simulate(load_one(one_chat), strategy, client=None, model=MODEL)
    assert strategy.ended == []


def after_chats(strategy: BaseStrategy) -> Window:
    simulate(load_one(TWO_CHATS), strategy, client=None, model=MODEL)
    return strategy.window()


def test_by_default_a_new_chat_starts_empty_but_for_the_system_prompt():
    window = after_chats(SlidingStrategy())
    assert contents(window.messages) == [
        "You are a personal assistant.",
        "Hi again.",
        "Welcome back!",
    ]


def test_full_remembers_every_chat():
    window = after_chats(FullStrategy())
    assert "My daughter Leona is allergic to peanuts." in contents(window.messages)


@pytest.mark.parametrize("listing", ["message", "tool"])
def test_headtail_keeps_the_earlier_chat_as_one_retrievable_memory(listing: str):
    window = after_chats(HeadTailStrategy(listing=listing))
    texts = contents(window.messages)
    # The listing (the tool's description, or the index message just before
    # the current one) previews the earlier chat; no other message shows it.
    if listing == "message":
        assert texts[-2].startswith(INDEX_INTRO)
        listed, texts = texts[-2], texts[:-2] + texts[-1:]
    else:
        listed = window.tools[0]["function"]["description"]
    assert texts == ["You are a personal assistant.", "Hi again.", "Welcome back!"]
    assert "Leona" in listed
    (tool,) = window.tools
    assert tool["function"]["name"] == "retrieve_memory"
    listing_lines = re.findall(r"^id=(\S+) .*\| messages (\d+) \|", listed, re.M)
    assert listing_lines == [("m1", "2")]
    assert window.tool_handler is not None
    assert window.tool_handler("retrieve_memory", {"id": "m1"}) == (
        "user: My daughter Leona is allergic to peanuts.\nassistant: Noted, no peanuts."
    )


def test_tool_call_ids_are_unique_across_sessions():
    conversation = load_one(
        """
        id: tools
        sessions:
          - turns:
              - user: List the files.
              - tool: {name: shell, output: a.py}
          - turns:
              - user: List them again.
              - tool: {name: shell, output: b.py}
        probes: [{id: p, user: q}]
        """
    )
    ids = [c["id"] for m in conversation.messages for c in m.get("tool_calls") or []]
    assert len(ids) == 2 and len(set(ids)) == 2, ids


# -- 5. constraints in parts -----------------------------------------------------------------

SPLIT = """
    id: split
    turns:
      - user: Let's start on the parser.
      - assistant: Sure.
      - generate: {kind: chitchat, turns: 4, seed: 3}
      - user: Next, the writer.
      - assistant: On it.
    constraints:
      - id: style
        parts:
          - {at_turn: 2, text: "Use tabs for indentation."}
          - {at_turn: 11, text: "And keep lines under 80 characters."}
        check: {regex: "\\t"}
      - {id: other, at_turn: 1, text: "Reply in English."}
    probes:
      - {id: code, constraint: style, user: "Write a function that parses a line."}
      - {id: plain, user: "What did we start on?"}
"""


def test_each_part_of_a_constraint_joins_the_user_message_at_or_before_its_turn():
    conversation = load_one(SPLIT)
    messages = conversation.messages
    assert messages[0]["content"] == (
        "Let's start on the parser.\nUse tabs for indentation.\nReply in English."
    )
    # Message 11 is the user's "Next, the writer." (4 chit-chat pairs after two turns).
    assert messages[10]["content"] == "Next, the writer.\nAnd keep lines under 80 characters."
    planted = [m for m in messages if "under 80" in m["content"] or "tabs" in m["content"]]
    assert len(planted) == 2


def test_a_probe_naming_a_constraint_gets_its_check():
    code, plain = load_one(SPLIT).probes
    assert code.constraint == "style"
    assert code.constraint_check == Expectation(regex="\t")
    assert plain.constraint_check is None


def test_a_split_constraint_survives_verbatim_only_with_every_part():
    conversation = load_one(SPLIT)
    (style,) = [f for f in conversation.facts if f.id == "style"]
    whole = Window(messages=list(conversation.messages))
    assert fact_survival([style], whole) == {"style": "verbatim"}
    without_second = Window(messages=conversation.messages[:10] + conversation.messages[11:])
    assert fact_survival([style], without_second) == {"style": "gone"}
    without_first = Window(messages=conversation.messages[1:])
    assert fact_survival([style], without_first) == {"style": "gone"}


# -- 6. needles by role ---------------------------------------------------------------------

LONG_USER = " ".join(["We keep talking about the weather and the garden."] * 20)


def test_a_needle_with_role_tool_lands_inside_the_nearest_tool_output():
    conversation = load_one(
        f"""
        id: n
        turns:
          - user: "{LONG_USER}"
          - tool: {{name: logs, output: "line one\\nline two\\nline three\\nline four"}}
          - assistant: "Done."
          - user: "{LONG_USER}"
          - user: "{LONG_USER}"
          - tool: {{name: logs, output: "far one\\nfar two"}}
        needles:
          - {{id: n, depth: 0.05, role: tool, text: "TOKEN = tok-4471", question: q,
             answer: tok-4471}}
        probes: [{{id: n, needle: n}}]
        """
    )
    holding = [i for i, m in enumerate(conversation.messages) if "tok-4471" in (m["content"] or "")]
    assert holding == [2]
    tool = conversation.messages[2]
    assert tool["role"] == "tool"
    lines = tool["content"].splitlines()
    # Inside the output, at a line boundary: not before the first or after the last line.
    assert lines[0] == "line one" and lines[-1] == "line four"
    assert "TOKEN = tok-4471" in lines


def test_a_needle_role_with_no_such_message_is_an_error_at_the_role():
    message = error(
        """
        id: n
        turns:
          - user: hi
          - assistant: ho
        needles:
          - id: n
            depth: 0.5
            role: tool
            text: X
        probes: [{id: p, user: q}]
        """
    )
    assert message == f"{PATH}:8:11: the session has no tool message to plant in"


# -- 7. Python checks ------------------------------------------------------------------------

FENCED = "Here you go:\n```python\nimport urllib3\n\nhttp = urllib3.PoolManager()\n```\nDone."
BARE = "import urllib3\n\n\ndef get(url):\n    return urllib3.request('GET', url)\n"


@pytest.mark.parametrize("answer", [FENCED, BARE], ids=["fenced", "bare"])
def test_python_checks_read_fenced_and_bare_code(answer):
    assert check_answer(answer, Expectation(python={"require_imports": ["urllib3"]})) == []
    assert check_answer(answer, Expectation(python={"forbid_imports": ["urllib3"]})) == [
        "python code does not import 'urllib3'"
    ]


@pytest.mark.parametrize(
    "code, forbidden, caught",
    [
        ("import os.path", "os.path", True),
        ("from os.path import join", "os.path", True),
        ("import os.path", "os", True),
        ("from os.path import join", "os", True),
        ("import os", "os.path", False),
        ("import requests as http", "requests", True),
        ("import requests_oauthlib", "requests", False),
        ("def f():\n    import requests\n", "requests", True),
    ],
)
def test_forbid_imports_follows_dotted_module_names(code, forbidden, caught):
    failed = check_python(code, PythonCheck(forbid_imports=[forbidden]))
    assert failed == ([f"python code does not import {forbidden!r}"] if caught else [])


def test_require_imports_is_met_by_a_submodule_import():
    assert check_python("from os.path import join", PythonCheck(require_imports=["os"])) == []


def test_forbid_imports_catches_a_submodule_imported_by_from():
    assert check_python("from os import path", PythonCheck(forbid_imports=["os.path"])) != []


def test_comments_and_strings_are_not_imports():
    code = (
        "```python\nimport urllib3  # do not import requests\n"
        "# import requests\nNOTE = 'import requests'\n```"
    )
    assert (
        check_python(code, PythonCheck(forbid_imports=["requests"], require_imports=["urllib3"]))
        == []
    )


def test_python_code_after_another_fenced_block_is_found():
    answer = "Install it:\n```bash\npip install urllib3\n```\nThen:\n```python\nimport urllib3\n```"
    assert check_python(answer, PythonCheck(require_imports=["urllib3"])) == []


@pytest.mark.parametrize(
    "answer",
    [
        "I would use the standard library for that.",
        "```python\ndef broken(:\n```",
        pytest.param("", id="empty"),
        pytest.param(None, id="none"),
    ],
)
def test_an_answer_without_parseable_code_fails_clearly(answer):
    failed = check_answer(answer, Expectation(python={"forbid_imports": ["requests"]}))
    assert failed == ["contains Python code that parses"]


# -- 8. the oracle writes code ----------------------------------------------------------------

TASK = "Write a function that downloads a URL."


def code_imports(messages: list[dict[str, Any]]) -> set[str]:
    reply = respond(messages)
    assert reply.content and not reply.tool_calls
    modules = imported_modules(reply.content)
    assert modules is not None, reply.content
    return modules


def test_the_oracle_follows_a_visible_library_rule():
    messages = [
        {"role": "user", "content": "Never use the requests library; always use urllib3"},
        {"role": "assistant", "content": "Understood."},
        {"role": "user", "content": TASK},
    ]
    assert code_imports(messages) == {"urllib3"}


def test_the_oracle_takes_the_obvious_library_without_a_rule():
    messages = [
        {"role": "user", "content": "Hello there."},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": TASK},
    ]
    assert code_imports(messages) == {"requests"}


def test_the_oracle_avoids_a_forbidden_default():
    task = "Write a function that lists the files in a folder."
    messages = [{"role": "user", "content": "Hello there."}, {"role": "user", "content": task}]
    assert "pathlib" in code_imports(messages)
    messages[0]["content"] = "Never use pathlib"
    assert "pathlib" not in code_imports(messages)


@pytest.mark.parametrize(
    "rule, task, imported, avoided",
    [
        pytest.param(
            "Never use the requests library; always use urllib3.",
            TASK,
            "urllib3",
            "requests",
            id="require",
        ),
        pytest.param(
            "Never use pathlib.",
            "Write a function that lists the files in a folder.",
            None,
            "pathlib",
            id="forbid",
        ),
    ],
)
def test_the_oracle_reads_a_rule_that_ends_with_a_full_stop(rule, task, imported, avoided):
    modules = code_imports([{"role": "user", "content": rule}, {"role": "user", "content": task}])
    assert avoided not in modules
    assert imported is None or imported in modules


# -- 9. generators ---------------------------------------------------------------------------

KINDS = typing.get_args(GeneratorKind)  # chitchat and coding_session first
TEXT_KINDS = KINDS[2:]
JSON_KINDS = ("json_rows", "json_api", "spans")


@pytest.mark.parametrize("kind", KINDS)
def test_generators_are_deterministic_per_seed_and_differ_across_seeds(kind):
    def spec(seed: int) -> GenerateSpec:
        return GenerateSpec(kind=kind, seed=seed, rows=12, turns=3, words=60)

    assert generate_text(spec(1)) == generate_text(spec(1))
    assert generate_turns(spec(1)) == generate_turns(spec(1))
    assert generate_text(spec(1)) != generate_text(spec(2))


@pytest.mark.parametrize("kind", JSON_KINDS)
@pytest.mark.parametrize(
    "size",
    [{"rows": 1}, {"rows": 2}, {"rows": 37}, {"tokens": 1}, {"tokens": 40}, {"tokens": 3000}],
)
def test_json_generators_give_valid_json_at_any_size(kind, size):
    text = generate_text(GenerateSpec(kind=kind, seed=5, **size))
    data = json.loads(text)
    items = data["data"] if kind == "json_api" else data
    assert isinstance(items, list) and items
    if "rows" in size:
        assert len(items) == size["rows"]
    if kind == "json_api":
        assert data["meta"]["count"] == len(items)


@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_tokens_gives_roughly_that_many_tokens(kind):
    tokens = count_text_tokens(generate_text(GenerateSpec(kind=kind, seed=7, tokens=3000)))
    assert 2400 <= tokens <= 3600, tokens


def test_test_run_has_exactly_the_failures_asked_for():
    text = generate_text(GenerateSpec(kind="test_run", seed=4, rows=30, failures=2))
    failed = [line for line in text.splitlines() if line.endswith(" FAILED")]
    assert len(failed) == 2
    assert len([line for line in text.splitlines() if line.endswith(" PASSED")]) == 28
    assert text.count("Traceback (most recent call last):") == 2
    for line in failed:
        test_id = line.removesuffix(" FAILED")
        assert f"_____ {test_id.split('::')[1]} _____" in text
        assert f"\nFAILED {test_id}\n" in text
    assert "28 passed, 2 failed" in text


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_coding_sessions_pair_every_tool_result_with_its_call(seed):
    messages = generate_turns(GenerateSpec(kind="coding_session", seed=seed, turns=6))
    pending: set[str] = set()
    results = 0
    for message in messages:
        if message["role"] == "assistant":
            assert not pending, "a new assistant message before the pending calls were answered"
            pending = {call["id"] for call in message.get("tool_calls") or []}
            for call in message.get("tool_calls") or []:
                assert call["type"] == "function"
                json.loads(call["function"]["arguments"])
        elif message["role"] == "tool":
            assert message["tool_call_id"] in pending
            pending.remove(message["tool_call_id"])
            results += 1
    assert not pending
    assert results == 6
    assert sum(m["role"] == "user" for m in messages) == 6
