"""Scenario files are parsed by libyaml's C parser when PyYAML has it, with
the same data, the same line numbers and the same bounds as the pure-Python
loader; anything the C path refuses is loaded (or refused, with the usual
message) by the pure-Python loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ctxeval.scenario import yamlsource
from pytest_ctxeval.scenario.errors import ScenarioError
from pytest_ctxeval.scenario.limits import Limits

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


def test_a_billion_laughs_is_refused_with_the_usual_message(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(ScenarioError) as fast:
        parse("\n".join(lines) + "\n", tmp_path)
    yamlsource.use_c_parser = False
    try:
        with pytest.raises(ScenarioError) as slow:
            parse("\n".join(lines) + "\n", tmp_path)
    finally:
        yamlsource.use_c_parser = True
    assert "more than 1,000,000 values" in str(fast.value)
    assert str(fast.value) == str(slow.value)


def test_a_tab_that_libyaml_would_accept_is_refused_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    used = loaders_used(monkeypatch)
    with pytest.raises(ScenarioError, match=r"s\.yaml:1:3: invalid YAML"):
        parse("a:\tb\n", tmp_path)
    assert used == ["_Loader"]


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
