"""The ``ctxeval`` console script, run in-process: validate, schema,
strategies, report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

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
        probes: [{{id: p, user: q, expect: {{contains: "5433"}}}}]
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
        probes: [{id: p, user: q, expect: {contains: release}}]
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
    files = [
        yaml.safe_load(p.read_text(encoding="utf-8")) for p in (REPO / "strategies").glob("*.yaml")
    ]
    expected = sorted(preset["name"] for preset in files)
    assert expected and presets == expected
    assert names == sorted(available(preset_dirs=[]))
    for preset in files:  # each preset shows its kind and parameters
        params = ", ".join(f"{k}={v!r}" for k, v in (preset.get("params") or {}).items())
        assert f"{preset['kind']}({params})" in out


def test_strategies_reports_a_broken_preset(tmp_path, capsys, monkeypatch):
    write(tmp_path, "strategies/bad.yaml", "name: bad\nkind: no-such-kind\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "strategies")
    assert code == 1
    assert "bad.yaml" in err and "no-such-kind" in err


# -- report ----------------------------------------------------------------------------------


def record(strategy: str, verdict: Any, classification: Any) -> ResultRecord:
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
    # Five messages, the memory index, the probe.
    assert out.startswith("== 7 messages, ")
    assert "[… " in out and 'retrieve_memory(id="m1")' in out  # the user message was cut
    assert out.rstrip().splitlines()[-1].startswith("-- tool offered: ")
    # The index lists the memory just before the probe, the last message.
    index_at = out.index("-- [6] user ")
    assert out.index("Memory index (call retrieve_memory", index_at) < out.index("-- [7] user ")
    assert out.index("id=m1 | position 2 | messages 1 |") > index_at
    assert out.index("What is the code?") > out.index("-- [7] user ")


def test_show_prints_the_listing_in_the_tool_with_listing_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "headtail(listing=tool)"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== 6 messages, ")
    assert "Memory index" not in out
    assert "id=m1 | position 2" in out.rstrip().splitlines()[-1]  # in the tool offered


def test_show_at_a_message_and_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "sliding", "--message", "2", "--json"]) == 0
    window = json.loads(capsys.readouterr().out)
    # The call that produced message 2 sees the system prompt and message 1.
    assert [m["role"] for m in window["messages"]] == ["system", "user"]
    assert window["tools"] == []


def shown_roles(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["show", *argv, "--json"]) == 0
    return [m["role"] for m in json.loads(capsys.readouterr().out)["messages"]]


def test_show_at_a_turn_is_the_call_that_answers_that_user_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    # Turn 2 starts at the second user message ("Anything else?"): the call
    # that answers it sees everything up to and including that message.
    assert shown_roles(capsys, str(path), "--turn", "2") == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert shown_roles(capsys, str(path), "--turn", "1") == shown_roles(
        capsys, str(path), "--message", "2"
    )


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        (
            "--turn",
            "999",
            "--turn 999: scenario 'show-me' has 2 turns (user messages); valid: 1 to 2",
        ),
        ("--turn", "0", "--turn 0: scenario 'show-me' has 2 turns (user messages); valid: 1 to 2"),
        (
            "--message",
            "5",
            "--message 5: scenario 'show-me' has 4 messages after the system prompt; valid: 1 to 4",
        ),
    ],
)
def test_show_out_of_range_names_the_valid_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, expected: str
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    code, out, err = run(capsys, "show", str(path), flag, value)
    assert (code, out) == (1, "")
    assert err == f"ctxeval show: {expected}\n"


def test_show_rejects_an_unknown_strategy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    assert main(["show", str(path), "--strategy", "nope"]) == 1
    assert "unknown strategy 'nope'" in capsys.readouterr().err


# -- the command line itself -----------------------------------------------------------------


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """stderr of a usage error (argparse exits with 2)."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"ctxeval {version('pytest-ctxeval')}\n"


def test_help_says_what_the_tool_is_and_lists_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "context strategy" in out and "long sessions" in out
    commands = out.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    names = [line.split()[0] for line in commands]
    assert names == [
        "validate",
        "schema",
        "strategies",
        "show",
        "report",
        "runs",
        "compare",
        "view",
        "merge",
        "gate",
        "conform",
        "import",
        "init",
    ]
    # One line each, descriptions in one column.
    assert len({line.index(line.split()[1]) for line in commands}) == 1
    assert "examples:\n  ctxeval validate scenarios/" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["valdate"], "ctxeval: unknown command 'valdate'; did you mean 'validate'?"),
        (["strategis"], "ctxeval: unknown command 'strategis'; did you mean 'strategies'?"),
        (
            ["show", "x.yaml", "--tun", "3"],
            "ctxeval show: unknown option --tun; did you mean '--turn'?",
        ),
        (
            ["validate", "x.yaml", "--rot=."],
            "ctxeval validate: unknown option --rot=.; did you mean '--root'?",
        ),
    ],
)
def test_a_misspelt_command_or_option_gets_a_suggestion_on_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    err = usage_error(capsys, *argv)
    assert err.startswith(expected)
    assert err.count("\n") == 1 and "usage:" not in err


def test_an_unknown_command_without_a_close_match_lists_the_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = usage_error(capsys, "frobnicate")
    assert err.startswith(
        "ctxeval: unknown command 'frobnicate'; commands: validate, schema, strategies, show, "
        "report, runs, compare, view, merge, gate, conform, import"
    )


def test_no_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(capsys)
    assert err.startswith("ctxeval: no command given; commands: validate, schema,")
    assert err.count("\n") == 1


def test_strategies_are_listed_in_aligned_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        "strategies/a-preset-with-a-rather-long-name.yaml",
        "name: a-preset-with-a-rather-long-name\nkind: sliding\nparams: {turns: 2}\n"
        "description: Two turns.\n",
    )
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "strategies")
    assert code == 0
    rows = [line for line in out.splitlines() if line and not line.startswith("presets (")]
    # The second column starts at the same place in every row, presets included.
    starts = {len(line) - len(line.split(maxsplit=1)[1]) for line in rows}
    assert len(starts) == 1, out
    builtin_rows = [line for line in rows if not line.startswith("a-preset")]
    params = {line.index("[") for line in builtin_rows if "[" in line}
    assert len(params) == 1, out  # the parameters form a column too


def test_a_model_error_in_show_is_one_line_without_library_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.evaluate import inspect
    from pytest_ctxeval.llm.client import ModelError

    def failing_call(*args: object, **kwargs: object) -> None:
        raise ModelError(
            "BadRequestError: LLM Provider NOT provided. You passed model=x\n Pass model as "
            "E.g. `completion(model='huggingface/starcoder')` "
            "Learn more: https://docs.litellm.ai/docs/providers"
        )

    monkeypatch.setattr(inspect, "window_at", failing_call)
    path = write(tmp_path, "show.yaml", SHOW_SCENARIO)
    code, out, err = run(capsys, "show", str(path), "--strategy", "summarize")
    assert (code, out) == (1, "")
    assert err == (
        "ctxeval show: summarize called ctxeval/oracle: LLM Provider NOT provided. "
        "You passed model=x\n"
    )


def test_an_unforeseen_error_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ctxeval.results import store

    def broken(path: Path) -> None:
        raise RuntimeError(
            "the store broke. You can find help at https://example.invalid/help.\nsecond line"
        )

    monkeypatch.setattr(store, "load_results", broken)
    code, out, err = run(capsys, "report", str(tmp_path / "r.jsonl"))
    assert (code, out, err) == (1, "", "ctxeval report: RuntimeError: the store broke.\n")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API "
            "key provided: sk-bad. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "Incorrect API key provided: sk-bad.",
        ),
        (
            "Model x isn't mapped yet. Add it here - https://github.com/BerriAI/litellm/blob/"
            "main/model_prices_and_context_window.json",
            "Model x isn't mapped yet.",
        ),
        (
            "\x1b[1;31mGive Feedback / Get Help: "
            "https://github.com/BerriAI/litellm/issues/new\x1b[0m Connection refused",
            "Connection refused",
        ),
        ("--turn 3: out of range", "--turn 3: out of range"),
    ],
)
def test_error_lines_drop_library_links(message: str, expected: str) -> None:
    from pytest_ctxeval.llm.error_text import error_line

    assert error_line(RuntimeError(message)) == expected
