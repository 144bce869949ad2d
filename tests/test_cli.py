"""The ``ctxeval`` console script, run in-process: validate, schema,
strategies, report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_ctxeval.cli import main
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.store import write_results
from pytest_ctxeval.strategies.registry import available

REPO = Path(__file__).resolve().parent.parent

GOOD = """
    id: staging-port
    turns:
      - user: The staging database listens on port 5433, not the default.
      - assistant: Noted.
    probes:
      - id: port
        user: Which port does the staging database listen on?
        expect: {contains: "5433"}
"""

# The misspelt turn is on line 3, column 5.
BAD = """
    id: broken
    turns:
      - usr: A misspelt turn key.
    probes:
      - {id: p, user: q}
"""


def write(base: Path, relpath: str, text: str) -> Path:
    path = base / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- validate --------------------------------------------------------------------------------


def test_validate_a_good_file(tmp_path, capsys):
    path = write(tmp_path, "good.yaml", GOOD)
    code, out, err = run(capsys, "validate", str(path))
    assert code == 0
    assert out == f"{path}: ok (1 scenario)\n"
    assert err == ""


def test_validate_counts_the_scenarios_a_matrix_makes(tmp_path, capsys):
    path = write(tmp_path, "grid.yaml", "matrix: {n: [1, 2, 3]}\n" + textwrap.dedent(GOOD))
    code, out, _ = run(capsys, "validate", str(path))
    assert (code, out) == (0, f"{path}: ok (3 scenarios)\n")


def test_validate_a_directory_reports_every_file(tmp_path, capsys):
    good = write(tmp_path, "scenarios/a-good.yaml", GOOD)
    bad = write(tmp_path, "scenarios/nested/b-bad.yaml", BAD)
    code, out, err = run(capsys, "validate", str(tmp_path / "scenarios"))
    assert code == 1
    assert out == f"{good}: ok (1 scenario)\n"
    assert err.startswith(f"{bad}:3:5: turns[0]: a turn needs exactly one of the keys user,")
    assert err.rstrip().endswith("got 'usr'")
    assert "Traceback" not in err


def test_validate_a_missing_file_is_an_error(tmp_path, capsys):
    code, out, err = run(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert (code, out) == (1, "")
    assert err == f"{tmp_path / 'nope.yaml'}:1:1: file not found\n"


@pytest.mark.parametrize("fragment", ["_shared/turns.yaml", "_draft.yaml"])
def test_validate_skips_what_the_plugin_does_not_collect(tmp_path, capsys, fragment):
    root = tmp_path / "scenarios"
    write(
        root, fragment, "- user: The staging database listens on port 5433.\n- assistant: Noted.\n"
    )
    good = write(
        root,
        "uses-shared.yaml",
        f"""
        id: uses-shared
        turns: !include {fragment}
        probes: [{{id: p, user: q}}]
        """,
    )
    code, out, err = run(capsys, "validate", str(root))
    assert (code, out, err) == (0, f"{good}: ok (1 scenario)\n", "")


def test_validate_prints_a_warning_and_still_exits_0(tmp_path, capsys):
    path = write(
        tmp_path,
        "leak.yaml",
        """
        id: leak
        turns:
          - user: The staging database listens on port 5433.
        probes:
          - {id: ok, user: "Which port does staging use?", expect: {contains: "5433"}}
          - {id: leak, user: "Is it port 5433?", expect: {contains: "5433"}}
        """,
    )
    code, out, err = run(capsys, "validate", str(path))
    assert code == 0
    assert out == f"{path}: ok (1 scenario, 1 warning)\n"
    assert err == (
        f"{path}:6:5: warning: probe 'leak': contains '5433' already occurs in the question "
        "'Is it port 5433?'; a model that merely repeats the question passes this check\n"
    )


def release_in_a_subfolder(root: Path) -> Path:
    write(root, "_shared/system.txt", "You are the release assistant.\n")
    return write(
        root,
        "team/release.yaml",
        """
        id: release
        system: !include ../_shared/system.txt
        turns: [{user: hi}]
        probes: [{id: p, user: q}]
        """,
    )


def test_validate_a_directory_lets_includes_reach_anywhere_inside_it(tmp_path, capsys):
    root = tmp_path / "scenarios"
    release = release_in_a_subfolder(root)
    write(tmp_path, "outside.txt", "not a scenario fragment")
    write(
        root,
        "escapes.yaml",
        "id: e\nsystem: !include ../outside.txt\nturns: [{user: hi}]\nprobes: [{id: p, user: q}]\n",
    )
    code, out, err = run(capsys, "validate", str(root))
    assert code == 1
    assert out == f"{release}: ok (1 scenario)\n"
    assert err.startswith(
        f"{root / 'escapes.yaml'}:2:9: !include '../outside.txt' leaves the scenario root"
    )


def test_validate_a_single_file_accepts_includes_that_pytest_accepts(tmp_path, capsys, monkeypatch):
    release = release_in_a_subfolder(tmp_path / "scenarios")
    monkeypatch.chdir(tmp_path)  # the project root, where pytest.ini would be
    code, _, err = run(capsys, "validate", str(release.relative_to(tmp_path)))
    assert (code, err) == (0, "")


# -- schema ----------------------------------------------------------------------------------


@pytest.fixture
def schema(capsys) -> dict:
    code, out, err = run(capsys, "schema")
    assert (code, err) == (0, "")
    return json.loads(out)


def test_schema_is_json_schema_for_every_authoring_key(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"turns", "sessions", "matrix", "needles", "probes", "vars", "constraints"} <= set(
        schema["properties"]
    )
    assert "python" in schema["$defs"]["Expectation"]["properties"]
    assert schema["additionalProperties"] is False


DOC_FIRST_SCENARIO = """
    id: staging-port
    description: A detail from turn one is needed ten turns later.
    tags: [long-session]
    system: You are a coding assistant working in the user's repository.
    turns:
      - user: The staging database listens on port 5433, not the default.
      - assistant: Noted.
      - generate: {kind: chitchat, turns: 10, seed: 1}
    probes:
      - id: port
        user: Which port does the staging database listen on?
        expect: {contains: "5433", python: {forbid_imports: [requests]}}
"""

DOC_GRID = """
    id: needle-grid
    matrix:
      depth: [0.1, 0.5, 0.9]
      turns: [10, 20, 50]
    turns:
      - generate: {kind: chitchat, turns: "{{ turns }}", seed: 1}
    needles:
      - {id: code, depth: "{{ depth }}", text: "The vault code is 7-3-9-1.",
         question: "What is the vault code?", answer: "7-3-9-1"}
    probes:
      - {id: code, needle: code}
"""


def schema_errors(schema: dict, text: str) -> list[str]:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema)
    return [e.message for e in validator.iter_errors(yaml.safe_load(textwrap.dedent(text)))]


def test_an_editor_accepts_the_documented_scenario_and_flags_a_typo(schema):
    assert schema_errors(schema, DOC_FIRST_SCENARIO) == []
    typo = DOC_FIRST_SCENARIO.replace("description:", "descripton:")
    assert any("descripton" in e for e in schema_errors(schema, typo))


def test_an_editor_accepts_the_documented_matrix_grid(schema):
    assert schema_errors(schema, DOC_GRID) == []


# -- strategies ------------------------------------------------------------------------------


def listed(out: str) -> tuple[list[str], list[str]]:
    """Names in the built-in section and in the presets section."""
    builtins, _, presets = out.partition("\npresets (")
    names = [line.split()[0] for line in builtins.splitlines() if line.strip()]
    preset_names = [line.split()[0] for line in presets.splitlines()[1:] if line.strip()]
    return names, preset_names


def test_strategies_lists_every_builtin(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no strategies/ here: no presets
    code, out, err = run(capsys, "strategies")
    assert (code, err) == (0, "")
    names, presets = listed(out)
    assert names == sorted(available(preset_dirs=[]))
    assert {"full", "headtail", "sliding", "truncate"} <= set(names)
    assert presets == [] and "presets" not in out


def test_strategies_lists_the_repos_presets(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    code, out, err = run(capsys, "strategies")
    assert (code, err) == (0, "")
    names, presets = listed(out)
    expected = sorted(
        yaml.safe_load(p.read_text(encoding="utf-8"))["name"]
        for p in (REPO / "strategies").glob("*.yaml")
    )
    assert expected and presets == expected
    assert names == sorted(available(preset_dirs=[]))
    assert "sliding(turns=8)" in out


def test_strategies_reports_a_broken_preset(tmp_path, capsys, monkeypatch):
    write(tmp_path, "strategies/bad.yaml", "name: bad\nkind: no-such-kind\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "strategies")
    assert code == 1
    assert "bad.yaml" in err and "no-such-kind" in err


# -- report ----------------------------------------------------------------------------------


def record(strategy: str, verdict: str, classification: str) -> ResultRecord:
    return ResultRecord(
        scenario="staging-port",
        strategy=strategy,
        model="ctxeval/oracle",
        probe="port",
        verdict=verdict,
        classification=classification,
        answer="The staging database listens on port 5433.",
        prompt_tokens=120,
    )


def test_report_renders_a_results_file(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    write_results(
        results, [record("full", "pass", "ok"), record("sliding", "fail", "context_loss")]
    )
    out_file = tmp_path / "out" / "report.html"
    code, out, err = run(capsys, "report", str(results), "-o", str(out_file))
    assert (code, err) == (0, "")
    assert out == f"report: {out_file} (2 records)\n"
    html = out_file.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    for text in ("staging-port", "sliding", "context_loss"):
        assert text in html


def test_report_on_a_malformed_results_file_names_the_line(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    write_results(results, [record("full", "pass", "ok")])
    with results.open("a", encoding="utf-8") as fh:
        fh.write('{"scenario": "s", "strategy": "full"}\n')
    out_file = tmp_path / "report.html"
    code, out, err = run(capsys, "report", str(results), "-o", str(out_file))
    assert (code, out) == (1, "")
    assert err.startswith(f"ctxeval report: {results}:2: not a result record")
    assert not out_file.exists()


def test_report_on_a_missing_results_file(tmp_path, capsys):
    code, _, err = run(
        capsys, "report", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "r.html")
    )
    assert code == 1
    assert err.startswith("ctxeval report: ") and "none.jsonl" in err


def test_schema_markdown_is_a_field_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Scenario\n")
    assert "| `probes` | list of Probe | required |" in out
    assert "| `python` | PythonCheck | null | checks on the Python code in the answer |" in out


def test_the_docs_schema_reference_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    # docs/authoring.md embeds `ctxeval schema --markdown`; regenerate it when
    # the models change.
    main(["schema", "--markdown"])
    reference = capsys.readouterr().out.replace("### ", "#### ").strip()
    docs = (Path(__file__).parent.parent / "docs" / "authoring.md").read_text(encoding="utf-8")
    assert reference in docs


SHOW_SCENARIO = """
    id: show-me
    system: You help.
    turns:
      - user: "The code is ZEBRA-42. Remember it please, it matters a great deal to the whole
          team, because without it nobody can open the server room on Monday morning, and the
          movers arrive at eight with the new racks."
      - assistant: Noted.
      - user: Anything else?
      - assistant: No.
    probes:
      - {id: code, user: "What is the code?", expect: {contains: ZEBRA-42}}
"""


def test_show_prints_the_window_a_strategy_builds_at_the_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "headtail"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== 6 messages, ")
    assert "[… " in out and 'retrieve_memory(id="m1")' in out  # the user message was cut
    assert out.rstrip().splitlines()[-1].startswith("-- tool offered: ")
    assert "What is the code?" in out  # the probe is the last message


def test_show_at_a_turn_and_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "sliding", "--turn", "2", "--json"]) == 0
    window = json.loads(capsys.readouterr().out)
    # The call that produced message 2 sees the system prompt and message 1.
    assert [m["role"] for m in window["messages"]] == ["system", "user"]
    assert window["tools"] == []


def test_show_rejects_an_unknown_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "nope"]) == 1
    assert "unknown strategy 'nope'" in capsys.readouterr().err
