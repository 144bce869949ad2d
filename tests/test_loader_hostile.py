"""Hostile and broken scenario files: each is one clean ScenarioError naming
file:line:column, found quickly and in little memory, while the other files
of a run still run.  Limits are stated (CTXEVAL_MAX_*), named when hit, and
can be raised.

The corpus in tests/fixtures/broken/ holds small broken files; fragments they
include live in its _parts/ folder.  Huge inputs are made here, at run time.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import textwrap
import threading
import tracemalloc
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from conftest import output
from inline_scenarios import PATH, only_error, parse_inline

from pytest_ctxeval.cli import main
from pytest_ctxeval.scenario.errors import ScenarioError
from pytest_ctxeval.scenario.limits import Limits, env_name
from pytest_ctxeval.scenario.loader import load_conversations, parse_conversations

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "fixtures" / "broken"
CORPUS_FILES = sorted(CORPUS.glob("*.yaml"))

GOOD = """\
id: valid
turns:
  - user: "The launch code is ZEBRA-42."
probes:
  - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""


def load_error(path: Path, **kwargs: Any) -> str:
    with pytest.raises(ScenarioError) as info:
        load_conversations(path, **kwargs)
    return str(info.value)


def write(base: Path, relpath: str, text: str) -> Path:
    path = base / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def in_thread(fn: Any, timeout: float = 10.0) -> Any:
    """``fn()``'s result or exception; fails if it has not returned in time
    (a daemon thread, so a blocked one cannot hang the test run)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"still running after {timeout} s (blocked?)"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# -- the corpus: every file is one clean ScenarioError ---------------------------------------


def test_the_corpus_has_at_least_sixty_broken_files():
    assert len(CORPUS_FILES) >= 60


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_a_broken_file_is_one_scenario_error_naming_file_and_line(path):
    tracemalloc.start()
    try:
        # Anything but a ScenarioError escapes pytest.raises and fails the test.
        message = load_error(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert re.search(rf"(^|/){re.escape(path.name)}:\d+:\d+: \S", message), message
    assert "bug in pytest-ctxeval" not in message  # the loader's last-resort net
    assert "Traceback" not in message
    assert peak < 64_000_000, f"{peak:,} bytes"


# What some corpus files must say: where, and what was expected or which limit.
EXPECTED = {
    "nul-byte.yaml": (1, "character U+0000 (NUL) is not allowed"),
    "bell-character.yaml": (2, "character U+0007"),
    "not-utf8.yaml": (2, "not UTF-8: byte 0xff at line 2, column 14"),
    "utf16.yaml": (1, "the file is UTF-16"),
    "empty.yaml": (1, "empty file: expected a scenario mapping"),
    "list-of-scalars.yaml": (1, "expected a scenario: a mapping with id, turns, probes"),
    "huge-integer.yaml": (5, "an integer of 5,000 digits"),
    "int-tag-on-text.yaml": (5, "cannot read 'abc' as !!int"),
    "bool-tag-on-text.yaml": (5, "cannot read 'maybe' as !!bool"),
    "alias-to-itself.yaml": (4, "an alias refers to a list or mapping that contains it"),
    "deep-flow-lists.yaml": (6, "(set CTXEVAL_MAX_YAML_DEPTH to raise it)"),
    "deep-block-lists.yaml": (106, "nested 101 deep; the limit is 100"),
    "billion-laughs.yaml": (13, "(set CTXEVAL_MAX_YAML_NODES to raise it)"),
    "alias-text-bomb.yaml": (12, "(set CTXEVAL_MAX_YAML_CHARS to raise it)"),
    "misspelt-top-key.yaml": (4, "unknown key 'prob' in scenario; expected one of: id,"),
    "generate-unknown-kind.yaml": (3, "did you mean 'chitchat'?"),
    "generate-billion-rows.yaml": (
        3,
        "json_rows with rows: 1,000,000,000 makes about 45,000,000,000 tokens; "
        "the limit is 4,000,000 (set CTXEVAL_MAX_GENERATED_TOKENS to raise it)",
    ),
    "generate-many-medium.yaml": (5, "generated text in this file comes to about 4,140,000"),
    "matrix-million.yaml": (
        3,
        "matrix expands to 1,048,576 scenarios; the limit is 1,000 "
        "(set CTXEVAL_MAX_MATRIX to raise it)",
    ),
    "template-string-bomb.yaml": (
        3,
        "repeating text 3,000,000,000 times would make 3,000,000,000 characters; "
        "the limit is 1,000,000 (set CTXEVAL_MAX_TEMPLATE_CHARS to raise it)",
    ),
    "template-nested-loops.yaml": (3, "(set CTXEVAL_MAX_TEMPLATE_STEPS to raise it)"),
    "template-list-repeat.yaml": (3, "repeating list 3,000 times would make more than 100,000"),
    "template-list-doubling.yaml": (3, "printing this list would make more than"),
    "template-pprint.yaml": (3, "|pprint would make more than 100,000 characters"),
    "template-tojson.yaml": (3, "|tojson would make more than 100,000 characters"),
    "template-repeated-field.yaml": (3, "str.format of these values would make 18,000,060"),
    "template-slices-kept.yaml": (3, "(set CTXEVAL_MAX_TEMPLATE_CHARS to raise it)"),
    "template-range-bomb.yaml": (3, "range() of 1,000,000,000 numbers"),
    "template-doubling.yaml": (3, "(set CTXEVAL_MAX_TEMPLATE_CHARS to raise it)"),
    "template-huge-power.yaml": (3, "7 ** 10,000,000 would make an integer of about"),
    "template-zero-division.yaml": (3, "ZeroDivisionError: division by zero"),
    "template-float-overflow.yaml": (3, "OverflowError"),
    "template-macro-recursion.yaml": (3, "calls itself too deeply"),
    "template-python-internals.yaml": (3, "unsafe"),
    "include-missing.yaml": (2, "!include '_parts/nowhere.txt': no such file"),
    "include-directory.yaml": (2, "is a directory, not a file"),
    "include-itself.yaml": (3, "makes a cycle: include-itself.yaml -> include-itself.yaml"),
    "include-cycle.yaml": (2, "makes a cycle: cycle-a.yaml -> cycle-b.yaml -> cycle-a.yaml"),
    "include-latin1.yaml": (2, "!include '_parts/latin1.txt': not UTF-8: byte 0xe9"),
    "include-fan-out.yaml": (13, "(set CTXEVAL_MAX_INCLUDES to raise it)"),
    "include-too-deep.yaml": (7, "(set CTXEVAL_MAX_INCLUDE_DEPTH to raise it)"),
    "include-deep-nesting.yaml": (7, "at _parts/nested-lists.yaml:1:"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_broken_file_says_where_and_what_was_expected(name):
    line, fragment = EXPECTED[name]
    message = load_error(CORPUS / name, display_path=f"broken/{name}")
    problems = message.splitlines()
    assert any(p.startswith(f"broken/{name}:{line}:") and fragment in p for p in problems), message


# -- things the corpus cannot hold ------------------------------------------------------------


def test_a_fifo_named_yaml_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    message = in_thread(lambda: load_error(fifo))
    assert message == f"{fifo}:1:1: is a named pipe (FIFO), not a regular file"


def test_a_device_named_yaml_is_refused_without_reading_it(tmp_path):
    endless = tmp_path / "zero.yaml"
    endless.symlink_to("/dev/zero")  # reading it would never end
    message = in_thread(lambda: load_error(endless))
    assert message == f"{endless}:1:1: is a character device, not a regular file"


def test_an_include_of_a_fifo_is_refused_at_its_line(tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")
    path = write(tmp_path, "s.yaml", "id: s\nsystem: !include pipe.txt\n" + GOOD.split("\n", 1)[1])
    message = in_thread(lambda: load_error(path))
    assert message == f"{path}:2:9: !include 'pipe.txt': is a named pipe (FIFO), not a regular file"


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:  # sparse: no disk space, nothing to read
        f.truncate(Limits().file_bytes + 1)
    read: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting_read)
    message = load_error(path)
    monkeypatch.undo()
    assert sum(read) == 0  # refused on its size alone
    assert message == (
        f"{path}:1:1: the file has 10,000,001 bytes; the limit is 10,000,000 "
        "(set CTXEVAL_MAX_FILE_BYTES to raise it)"
    )


def test_huge_text_passed_directly_is_refused_too():
    text = "id: s\ndescription: " + "x" * 10_000_001
    with pytest.raises(ScenarioError) as info:
        parse_conversations(text, PATH)
    assert "(set CTXEVAL_MAX_FILE_BYTES to raise it)" in str(info.value)


def test_nesting_thousands_deep_through_includes_is_refused(tmp_path):
    # Each fragment nests 40 lists and includes the next: 25 files, 1,000 deep.
    for i in range(25):
        inner = f"!include part-{i + 1}.yaml" if i < 24 else "x"
        write(tmp_path, f"_p/part-{i}.yaml", "[" * 40 + inner + "]" * 40 + "\n")
    path = write(tmp_path, "s.yaml", GOOD + "tags: !include _p/part-0.yaml\n")
    message = load_error(path, limits=Limits(include_depth=100))
    assert message.startswith(f"{path}:6:7: !include '_p/part-0.yaml', at _p/part-2.yaml:1:")
    assert "nested more than 100 deep (counting the files that include this one)" in message


def test_an_alias_of_an_include_costs_the_whole_included_file(tmp_path):
    # 2,000 values included once, then aliased 600 times: 1.2 million values.
    write(tmp_path, "_p/rows.yaml", "[" + ", ".join(["r"] * 2000) + "]\n")
    aliases = ", ".join(["*rows"] * 600)
    path = write(
        tmp_path, "s.yaml", GOOD + f"vars:\n  a: &rows !include _p/rows.yaml\n  b: [{aliases}]\n"
    )
    message = load_error(path)
    assert "the file expands to more than 1,000,000 values" in message
    assert "(set CTXEVAL_MAX_YAML_NODES to raise it)" in message


def test_a_template_stops_at_the_file_time_limit():
    # Steps are not counted here, so only the clock can stop 10**10 iterations.
    text = """
        id: s
        vars: {n: 100000}
        system: "{% for i in range(n) %}{% for j in range(n) %}{% endfor %}{% endfor %}"
        turns: [{user: hi}]
        probes: [{id: p, user: q}]
        """
    limits = Limits(template_seconds=1, template_steps=10**12)
    with pytest.raises(ScenarioError) as info:
        parse_conversations(textwrap.dedent(text).lstrip(), PATH, limits=limits)
    assert str(info.value) == (
        f"{PATH}:3:9: template: rendering the templates of this file ran past 1 s; "
        "the limit is 1 (set CTXEVAL_MAX_TEMPLATE_SECONDS to raise it)"
    )


# -- within the limits, what users write still loads -----------------------------------------


@pytest.mark.parametrize("day", ["2024-01-01", "2001-13-45"])
def test_a_date_like_id_stays_the_text_it_is(day):
    # YAML would read a date (or fail to build one for month 13).
    (conversation,) = parse_inline(
        f"id: {day}\nturns: [{{user: hi}}]\nprobes: [{{id: p, user: q}}]\n"
    )
    assert conversation.id == day


def test_dates_are_never_constructed_anywhere():
    (conversation,) = parse_inline(
        """
        id: dates
        sessions:
          - label: 2024-05-01
            turns: [{user: "We met on the 1st."}]
          - label: !!timestamp 2001-13-45
            turns: [{user: "And again."}]
        probes: [{id: p, user: q}]
        """
    )
    labels = [s.label for s in conversation.scenario.sessions or []]
    assert labels == ["2024-05-01", "2001-13-45"]


def test_a_utf8_byte_order_mark_is_dropped_from_files_and_includes(tmp_path):
    (tmp_path / "system.txt").write_bytes(b"\xef\xbb\xbfYou are terse.")
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode() + b"system: !include system.txt\n")
    (conversation,) = load_conversations(path)
    assert conversation.id == "valid"
    assert conversation.messages[0] == {"role": "system", "content": "You are terse."}


def test_the_bundled_scenarios_load_within_the_default_limits():
    files = sorted((REPO / "scenarios").glob("*.yaml"))
    assert files
    for path in files:
        assert load_conversations(path, root=REPO / "scenarios"), path


def test_the_1000_turn_benchmark_session_loads_within_the_default_limits():
    spec = importlib.util.spec_from_file_location("bench", REPO / "benchmarks" / "bench.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    (conversation,) = parse_conversations(bench.session_yaml(1000, rows=2000), "bench.yaml")
    text = sum(len(m.get("content") or "") for m in conversation.messages)
    assert text > 1_500_000  # the 1.6 MB session the benchmarks replay


def test_a_megabyte_transcript_loads_within_the_default_limits(tmp_path):
    # About the size of an imported LoCoMo conversation.
    turns = "".join(
        f'  - user: "Day {i}: we talked about the garden, the weather and the trip. {"x" * 200}"\n'
        f'  - assistant: "Noted, day {i}."\n'
        for i in range(3500)
    )
    path = write(
        tmp_path, "long.yaml", "id: long\nturns:\n" + turns + "probes: [{id: p, user: q}]\n"
    )
    assert path.stat().st_size > 1_000_000
    (conversation,) = load_conversations(path)
    assert len(conversation.messages) == 7000


def test_a_template_within_the_limits_renders():
    (conversation,) = parse_inline(
        """
        id: t
        vars: {n: 3, name: billing}
        turns:
          - user: "{% for i in range(n) %}line {{ i }} of {{ name | upper }}; {% endfor %}"
          - user: "{{ '{:,}'.format(12345678) }} rows, {{ '%d' % 7 }} days, {{ 'ab' * 2 }}"
        probes: [{id: p, user: q}]
        """
    )
    assert [m["content"] for m in conversation.messages] == [
        "line 0 of BILLING; line 1 of BILLING; line 2 of BILLING; ",
        "12,345,678 rows, 7 days, abab",
    ]


def test_a_needle_in_a_long_tool_output_is_planted():
    # How long it takes is a benchmark figure (benchmarks/bench.py --only planting).
    needles = "".join(
        f"  - {{id: n{i}, turn: 3, text: 'Fact number {i} is true.'}}\n" for i in range(200)
    )
    text = (
        "id: s\nturns:\n  - user: read the logs\n"
        "  - tool: {name: logs, generate: {kind: log_lines, rows: 30000}}\n"
        "needles:\n" + needles + "probes: [{id: p, user: q}]\n"
    )
    (conversation,) = parse_conversations(text, PATH)
    tool_output = conversation.messages[-1]["content"]
    assert len(tool_output) > 1_500_000
    assert all(f"Fact number {i} is true." in tool_output for i in range(200))


def test_thousands_of_problems_are_summed_up_after_the_first_fifty():
    probes = "".join(f"  - {{id: p{i}, user: q, expect: {{contans: x}}}}\n" for i in range(3000))
    with pytest.raises(ScenarioError) as info:
        parse_conversations("id: s\nturns: [{user: hi}]\nprobes:\n" + probes, PATH)
    lines = str(info.value).splitlines()
    assert len(info.value.problems) == 3000
    assert len(lines) == 51
    assert lines[0].startswith(f"{PATH}:4:")
    assert lines[-1] == f"{PATH}: ... and 2,950 more problems in this file"


# -- limits: stated, named, raised by environment variables ----------------------------------


def test_every_limit_is_read_from_its_environment_variable():
    names = [f.name for f in fields(Limits)]
    environ = {env_name(name): str(1000 + i) for i, name in enumerate(names)}
    limits = Limits.from_env(environ)
    assert [getattr(limits, name) for name in names] == [1000 + i for i in range(len(names))]
    assert env_name("matrix") == "CTXEVAL_MAX_MATRIX"
    assert Limits.from_env({"CTXEVAL_MAX_MATRIX": "5_000"}).matrix == 5000


@pytest.mark.parametrize("value", ["lots", "0", "-3", "1.5"])
def test_a_bad_limit_variable_is_an_error_naming_it(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", value)
    path = write(tmp_path, "s.yaml", GOOD)
    assert load_error(path) == (
        f"{path}:1:1: environment variable CTXEVAL_MAX_MATRIX={value!r}: "
        "expected a whole number >= 1"
    )


GRID = GOOD + "matrix: {a: [1, 2], b: [3, 4]}\n"


def test_raising_a_limit_in_the_environment_lets_the_file_load(tmp_path, monkeypatch):
    path = write(tmp_path, "grid.yaml", GRID)
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "3")
    assert load_error(path) == (
        f"{path}:6:9: matrix expands to 4 scenarios; the limit is 3 "
        "(set CTXEVAL_MAX_MATRIX to raise it)"
    )
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "4")
    assert len(load_conversations(path)) == 4


def test_the_matrix_limit_counts_every_matrix_of_a_file():
    text = """
        scenarios:
          - {id: a, matrix: {x: [1, 2, 3]}, turns: [{user: hi}], probes: [{id: p, user: q}]}
          - {id: b, matrix: {x: [1, 2, 3]}, turns: [{user: hi}], probes: [{id: p, user: q}]}
        """
    with pytest.raises(ScenarioError) as info:
        parse_conversations(textwrap.dedent(text).lstrip(), PATH, limits=Limits(matrix=5))
    assert str(info.value) == (
        f"{PATH}:3:21: the matrices of this file expand to 6 scenarios; the limit is 5 "
        "(set CTXEVAL_MAX_MATRIX to raise it)"
    )


def test_ctxeval_validate_reads_the_limits_from_the_environment(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, "grid.yaml", GRID)
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "3")
    assert main(["validate", str(path)]) == 1
    assert "(set CTXEVAL_MAX_MATRIX to raise it)" in capsys.readouterr().err
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "4")
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: ok (4 scenarios)\n"


def test_pytest_reads_the_limits_from_the_environment(ctx, monkeypatch):
    ctx.write("scenarios/grid.yaml", GRID)
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "3")
    result = ctx.run("--ctx-strategy=full")
    assert "matrix expands to 4 scenarios; the limit is 3" in output(result)
    result.assert_outcomes(errors=1)
    monkeypatch.setenv("CTXEVAL_MAX_MATRIX", "4")
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=4)


# -- did you mean -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, hint",
    [
        pytest.param(
            "id: s\nturns: [{user: hi}]\nprob: [{id: p, user: q}]\nprobes: [{id: p, user: q}]\n",
            "unknown key 'prob' in scenario; expected one of: id, description, tags, system, "
            "turns, sessions, needles, constraints, probes, mode, rollout, recorded_windows, "
            "vars, matrix; "
            "did you mean 'probes'?",
            id="top-level",
        ),
        pytest.param(
            "id: s\nturns: [{user: hi}]\nprobes: [{id: p, user: q, expect: {contans: x}}]\n",
            "did you mean 'contains'?",
            id="expect",
        ),
        pytest.param(
            "id: s\nturns: [{usr: hi}]\nprobes: [{id: p, user: q}]\n",
            "a turn needs exactly one of the keys user, assistant, tool, generate "
            "(did you mean 'user'?); got 'usr'",
            id="turn",
        ),
        pytest.param(
            "id: s\nturns: [{generate: {kind: chitchatt}}]\nprobes: [{id: p, user: q}]\n",
            "did you mean 'chitchat'?",
            id="generator-kind",
        ),
        pytest.param(
            "id: s\nturns: [{user: hi}]\nconstraints: [{id: no-requests, text: Never.}]\n"
            "probes: [{id: p, user: q, constraint: no-request}]\n",
            "known constraints: no-requests; did you mean 'no-requests'?",
            id="constraint-name",
        ),
    ],
)
def test_a_misspelling_gets_a_did_you_mean(text, hint):
    assert hint in only_error(text)


def test_no_guess_when_nothing_is_close():
    message = only_error("id: s\nturns: [{user: hi}]\nzzz: 1\nprobes: [{id: p, user: q}]\n")
    assert "unknown key 'zzz'" in message
    assert "did you mean" not in message


# -- the plugin and ctxeval validate, with broken files next to good ones --------------------

# One of each kind of escape that used to stop the whole run with a traceback.
ESCAPES = [
    "nul-byte.yaml",
    "huge-integer.yaml",
    "deep-flow-lists.yaml",
    "include-latin1.yaml",
    "template-zero-division.yaml",
    "billion-laughs.yaml",
]


@pytest.mark.parametrize("name", ESCAPES)
def test_pytest_reports_one_error_for_the_broken_file_and_runs_the_good_one(ctx, name):
    (ctx.path / "scenarios").mkdir()
    shutil.copy(CORPUS / name, ctx.path / "scenarios" / name)
    shutil.copytree(CORPUS / "_parts", ctx.path / "scenarios" / "_parts")
    ctx.scenario("valid", GOOD)
    result = ctx.run("--ctx-strategy=full")
    text = output(result)
    assert text.count(f"ERROR collecting scenarios/{name}") == 1, text
    located = [
        line
        for line in result.outlines
        if line.startswith(f"scenarios/{name}:") and re.match(r".*?:\d+:\d+: ", line)
    ]
    assert len(located) == 1, text
    assert "Traceback" not in text and 'File "' not in text, text
    result.assert_outcomes(passed=1, errors=1)
    assert [(r["scenario"], r["verdict"]) for r in ctx.results()] == [("valid", "pass")]


def test_ctxeval_validate_lists_every_broken_file_and_exits_non_zero(tmp_path, capsys):
    folder = tmp_path / "broken"
    shutil.copytree(CORPUS, folder)
    os.mkfifo(folder / "pipe.yaml")  # listed too, and never read
    code = in_thread(lambda: main(["validate", str(folder)]), timeout=120)
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert "Traceback" not in err and 'File "' not in err
    for path in [*CORPUS_FILES, folder / "pipe.yaml"]:
        pattern = rf"^{re.escape(str(folder / path.name))}:\d+:\d+: "
        assert re.search(pattern, err, re.MULTILINE), f"{path.name} not listed"
    listed = re.findall(r"^(\S+?):\d+:\d+: ", err, re.MULTILINE)
    assert not [p for p in listed if "/_parts/" in p]  # fragments are not scenarios
