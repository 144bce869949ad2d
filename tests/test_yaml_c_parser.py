"""Scenario files are parsed by libyaml's C parser when PyYAML has it, with
the same data, the same line numbers and the same bounds as the pure-Python
loader; anything the C path refuses is loaded (or refused, with the usual
message) by the pure-Python loader."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from yaml.reader import Reader

from pytest_ctxeval.scenario import yamlsource
from pytest_ctxeval.scenario.errors import ScenarioError
from pytest_ctxeval.scenario.limits import Limits
from pytest_ctxeval.scenario_files import looks_like_scenario_file

pytestmark = pytest.mark.skipif(yamlsource.CParser is None, reason="PyYAML without libyaml")

DOCUMENTS = {
    "scenario": """
id: s
system: You are terse.
turns:
  - user: "Never use the requests library."
  - assistant: |
      Understood.
      I will use urllib3.
  - user: >
      folded
      text
probes:
  - {id: p, user: "Which library?", expect: {contains: urllib3}}
""",
    "anchors": "base: &b {port: 5432, host: db}\ncopy: *b\nlist: [*b, *b]\n",
    "non-ascii columns": "a: é\nb: [x, 日本, y]\nc: 😀 z\nd: {k: v}\n",
    "crlf": "a: 1\r\nb: [2, 3]\r\n",
    "bom": "\ufeffa: 1\nb: x\n",
    "scalars": "d: 2024-01-01\nbad_date: 2001-13-45\nn: 0o17\nb: yes\nf: 1.5e3\ns: !!str 12\n",
    "nulls": "e: ~\nf:\ng: null\n",
    "escapes": "a: \"\\x41\\u00e9\\U0001F600\"\nb: 'it''s'\n",
    "complex key": "? |\n  x\n: y\n",
    "no final newline": "a: 1\nb: 2",
    "nested anchors": "a: &a {k: &k [1, 2], s: &s text}\nb: [*a, *k, *s]\nc: {m: *a}\n",
    "merge key": "base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  b: 3\nlist:\n  <<: [*b]\n",
    # The "?" is refused only where libyaml and PyYAML read the text apart:
    # an alias in a flow list is read alike by both.
    "question mark, aliased in flow": "q: &q why?\nlist: [*q, {k: *q}]\n",
    "timestamps": "a: 2024-01-01\nb: 2024-01-01T10:00:00Z\nc: [2001-12-14 21:59:43.10 -5]\n",
    "big ints": "a: 123456789012345678901234567890\nb: -0x1F\nc: 1_000\nd: 0b101\n",
}


def parse(text: str, tmp_path: Path, **kwargs: Any) -> tuple[yaml.Node, Any]:
    return yamlsource.parse_yaml(text, "s.yaml", base_dir=tmp_path, root=tmp_path, **kwargs)


def start_marks(node: yaml.Node) -> list[tuple[str, int, int]]:
    """Every node's tag and start position, in document order (aliases once more)."""
    out = [(node.tag, node.start_mark.line, node.start_mark.column)]
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out += start_marks(key) + start_marks(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            out += start_marks(item)
    return out


def loaders_used(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    used: list[str] = []
    load = yamlsource._load

    def spy(loader_class: Any, *args: Any) -> Any:
        used.append(loader_class.__name__)
        return load(loader_class, *args)

    monkeypatch.setattr(yamlsource, "_load", spy)
    return used


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_both_parsers_give_the_same_data_and_positions(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    fast_tree, fast_data = parse(DOCUMENTS[name], tmp_path)
    assert used == ["_CLoader"]  # no fallback: the C parser read it
    monkeypatch.setattr(yamlsource, "use_c_parser", False)
    slow_tree, slow_data = parse(DOCUMENTS[name], tmp_path)
    assert fast_data == slow_data
    assert start_marks(fast_tree) == start_marks(slow_tree)


def test_includes_are_parsed_by_the_c_parser_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "part.yaml").write_text("- user: hello\n- assistant: hi\n", encoding="utf-8")
    (tmp_path / "note.txt").write_text("plain text", encoding="utf-8")
    used = loaders_used(monkeypatch)
    _, data = parse("turns: !include part.yaml\nnote: !include note.txt\n", tmp_path)
    assert data == {"turns": [{"user": "hello"}, {"assistant": "hi"}], "note": "plain text"}
    assert used == ["_CLoader", "_CLoader"]


def test_a_tab_that_libyaml_would_accept_is_refused_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    with pytest.raises(ScenarioError, match=r"s\.yaml:1:3: invalid YAML"):
        parse("a:\tb\n", tmp_path)
    assert used == ["_Loader"]


@pytest.mark.parametrize("tail", ["", " é", " \x85", " \ud7ff"], ids=["ascii", "é", "NEL", "D7FF"])
def test_the_c_path_is_taken_exactly_for_the_characters_the_python_reader_prints(
    tail: str,
) -> None:
    # The check has a quicker path for ASCII files: it must refuse the same characters.
    for code in [*range(0x80), 0xA0, 0xFFFE, 0x1F600]:
        text = f"a: b{chr(code)}c{tail}\n"
        printable = code != 9 and not Reader.NON_PRINTABLE.search(text)
        assert yamlsource._c_parser_reads_alike(text) is bool(printable), hex(code)


def test_a_file_the_c_path_gives_up_on_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever the C path counted before failing is refunded: the
    # pure-Python retry alone counts against the limits.
    text = "a: [1, 2, 3]\nb: [4, 5, 6]\n"  # 9 values

    def fail(self: Any, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(None, None, "C path gives up", node.start_mark)

    monkeypatch.setattr(yamlsource._CLoader, "construct_document", fail, raising=False)
    used = loaders_used(monkeypatch)
    _, data = parse(text, tmp_path, limits=Limits(yaml_nodes=12))
    assert data == {"a": [1, 2, 3], "b": [4, 5, 6]}
    assert used == ["_CLoader", "_Loader"]


@pytest.mark.parametrize("text", ["a: [x?, y]\n", "a: {q: why?}\n", "- [a ?b]\n"])
def test_a_question_mark_in_a_flow_collection_is_refused_as_before(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libyaml reads these as plain text; PyYAML's parser refuses them.
    used = loaders_used(monkeypatch)
    with pytest.raises(ScenarioError, match="invalid YAML"):
        parse(text, tmp_path)
    assert used == ["_CLoader", "_Loader"]


def test_a_question_mark_in_a_quoted_flow_scalar_stays_on_the_c_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    _, data = parse('probes: [{id: p, user: "Why?"}]\nq: Why? Because.\n', tmp_path)
    assert data == {"probes": [{"id": "p", "user": "Why?"}], "q": "Why? Because."}
    assert used == ["_CLoader"]


# -- the limits count alike on both paths --------------------------------------------------


def outcome(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c_parser: bool, **limits: int
) -> tuple[Any, ...]:
    """What one path makes of ``text``: the data, node positions and what the
    load counted, or the error message."""
    monkeypatch.setattr(yamlsource, "use_c_parser", c_parser)
    budget = yamlsource._Budget(Limits(**limits))
    try:
        tree, data = parse(text, tmp_path, budget=budget)
    except ScenarioError as exc:
        return ("error", str(exc))
    return ("loaded", data, start_marks(tree), budget.spent())


def assert_alike(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **limits: int
) -> tuple[Any, ...]:
    slow = outcome(text, tmp_path, monkeypatch, False, **limits)
    fast = outcome(text, tmp_path, monkeypatch, True, **limits)
    assert fast == slow
    return fast


def nested(depth: int, flow: bool) -> str:
    """A scalar inside ``depth`` lists or mappings."""
    if flow:
        return "[" * depth + "x" + "]" * depth + "\n"
    return "".join(" " * i + "k:\n" for i in range(depth - 1)) + " " * (depth - 1) + "k: x\n"


@pytest.mark.parametrize("flow", [False, True], ids=["block", "flow"])
def test_nesting_just_at_the_depth_limit_loads_on_the_c_path_and_just_over_it_is_refused_alike(
    flow: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    assert assert_alike(nested(6, flow), tmp_path, monkeypatch, yaml_depth=6)[0] == "loaded"
    assert used == ["_Loader", "_CLoader"]
    refused = assert_alike(nested(7, flow), tmp_path, monkeypatch, yaml_depth=6)
    assert "nested" in refused[1] and "the limit is 6" in refused[1]
    assert used[2:] == ["_Loader", "_CLoader", "_Loader"]  # the C path gave up


def test_the_depth_limit_counts_through_includes_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "two.yaml").write_text("k: {k: x}\n", encoding="utf-8")  # 2 deep
    (tmp_path / "three.yaml").write_text("k: {k: [x]}\n", encoding="utf-8")  # 3 deep
    # The include sits 3 deep: 3 + 2 is at the limit, 3 + 3 over it.
    used = loaders_used(monkeypatch)
    loaded = assert_alike("a: {b: [!include two.yaml]}\n", tmp_path, monkeypatch, yaml_depth=5)
    assert loaded[0] == "loaded"
    assert used[-2:] == ["_CLoader", "_CLoader"]
    refused = assert_alike("a: {b: [!include three.yaml]}\n", tmp_path, monkeypatch, yaml_depth=5)
    assert "counting the files that include this one" in refused[1]


COUNTED = {
    "plain": "a: [x, yy]\nb: {c: d, e: ''}\n",
    "aliases": "a: &a [x, yy]\nb: *a\nc: &c {k: *a}\nd: [*c, *c]\ne: &e zzz\nf: *e\n",
    "includes": (
        "part: &p !include part.yaml\nagain: !include part.yaml\nalias: *p\n"
        "note: &n !include note.txt\nnotes: [*n, *n]\nnested: !include outer.yaml\n"
    ),
}


@pytest.mark.parametrize("name", list(COUNTED))
def test_values_and_characters_count_alike_up_to_and_just_over_the_limits(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Included YAML and text, an alias to each, an include nested in an
    # included file: the C path must count every one as the Python path does.
    (tmp_path / "part.yaml").write_text("[one, {two: 2}]\n", encoding="utf-8")
    (tmp_path / "note.txt").write_text("some plain text", encoding="utf-8")
    (tmp_path / "outer.yaml").write_text("inner: !include part.yaml\n", encoding="utf-8")
    text = COUNTED[name]
    used = loaders_used(monkeypatch)
    loaded = assert_alike(text, tmp_path, monkeypatch)
    assert loaded[0] == "loaded"
    nodes, chars, _ = loaded[3]
    del used[:]
    assert assert_alike(text, tmp_path, monkeypatch, yaml_nodes=nodes, yaml_chars=chars) == loaded
    # Loaded on the C path, includes too, at the very limits.
    assert "_Loader" not in used[used.index("_CLoader") :]
    over_nodes = assert_alike(text, tmp_path, monkeypatch, yaml_nodes=nodes - 1)
    assert f"more than {nodes - 1:,} values" in over_nodes[1]
    over_chars = assert_alike(text, tmp_path, monkeypatch, yaml_chars=chars - 1)
    assert f"more than {chars - 1:,} characters" in over_chars[1]


def test_includes_of_yaml_and_text_load_alike_and_on_the_c_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "_p").mkdir()
    (tmp_path / "_p" / "turns.yaml").write_text(
        "- user: !include note.txt\n- assistant: hi\n", encoding="utf-8"
    )
    (tmp_path / "_p" / "note.txt").write_text("line one\nline two\n", encoding="utf-8")
    text = "a: !include _p/turns.yaml\nb: [!include _p/turns.yaml, !include _p/note.txt]\n"
    used = loaders_used(monkeypatch)
    loaded = assert_alike(text, tmp_path, monkeypatch)
    turns = [{"user": "line one\nline two\n"}, {"assistant": "hi"}]
    assert loaded[1] == {"a": turns, "b": [turns, "line one\nline two\n"]}
    assert loaded[3][2] == 5  # includes followed, counting repeats and the nested one
    assert "_Loader" not in used[used.index("_CLoader") :]


@pytest.mark.parametrize(
    "text, message",
    [
        ("a: &a [x, *a]\n", "an alias refers to a list or mapping that contains it"),
        ("a: !include a.yaml\n", "makes a cycle: a.yaml -> b.yaml -> a.yaml"),
        ("a: !include missing.yaml\n", "!include 'missing.yaml'"),
        ("a: !include ../out.yaml\n", "leaves the scenario root"),
    ],
)
def test_a_cycle_or_a_bad_include_is_refused_with_the_usual_message(
    text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").write_text("b: !include b.yaml\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("a: !include a.yaml\n", encoding="utf-8")
    (tmp_path.parent / "out.yaml").write_text("x: 1\n", encoding="utf-8")
    used = loaders_used(monkeypatch)
    refused = assert_alike(text, tmp_path, monkeypatch)
    assert message in refused[1]
    assert used[-1] == "_Loader"  # the message comes from the pure-Python loader


def test_timestamps_stay_text_and_big_ints_are_numbers_on_the_c_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    _, data = parse(
        "d: 2024-01-01\nt: 2024-01-01T10:00:00Z\nn: 123456789012345678901234567890\n", tmp_path
    )
    assert data == {
        "d": "2024-01-01",
        "t": "2024-01-01T10:00:00Z",
        "n": 123456789012345678901234567890,
    }
    assert used == ["_CLoader"]


def test_a_billion_laughs_falls_back_to_the_python_loader_for_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    used = loaders_used(monkeypatch)
    refused = assert_alike("\n".join(lines) + "\n", tmp_path, monkeypatch)
    assert "more than 1,000,000 values" in refused[1]
    assert used == ["_Loader", "_CLoader", "_Loader"]


def test_a_file_with_more_values_than_the_limit_is_given_up_on_before_it_is_all_built(
    tmp_path: Path,
) -> None:
    # 200,000 values against a limit of 1,000: libyaml stops composing at
    # the limit, so the tree of the whole file is never held in memory.
    text = "a: [" + "x, " * 200_000 + "x]\n"
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError, match="more than 1,000 values"):
            parse(text, tmp_path, limits=Limits(yaml_nodes=1000))
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 10_000_000, f"{peak:,} bytes"


# -- which files are scenario files ---------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("id: s\nprobes: []\n", True),
        ('"probes": 1\n', True),
        ("? probes\n: ~\n", True),
        ("- id: s\n  probes: []\n", True),
        ("- !include part.yaml\n", True),
        ("scenarios: [!include part.yaml]\n", True),
        ("scenarios:\n  - {id: s, probes: []}\n", True),
        ("id: s\nprobes: [\n", True),  # broken YAML, but meant as a scenario
        ("id: s\nprobes: []\n---\n[\n", True),  # only the first document counts
        # Untagged values are never an !include, whatever they look like.
        ("- part.yaml\n- 12\n- true\n", False),
        ("scenarios: [part.yaml, 2024-01-01]\n", False),
        ("scenarios: [{id: s}]\n", False),
        ("services: {db: {image: postgres}}\n", False),
        ("probes\n", False),
        ("", False),
        ("on: [push\n", False),
    ],
)
def test_which_files_look_like_scenario_files(text: str, expected: bool, tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text, encoding="utf-8")
    assert looks_like_scenario_file(path) is expected
