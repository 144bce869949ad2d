"""A broken scenario file is one clear error naming file:line:column, never a
traceback, and the other scenario files of the run still run."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from conftest import assert_no_traceback, output


@dataclass(frozen=True)
class BadFile:
    name: str
    yaml: str
    line: int  # where the mistake is, 1-based
    message: str  # a fragment saying what was wrong or expected

    @property
    def path(self) -> str:
        return f"scenarios/{self.name}.yaml"


BAD_FILES = [
    BadFile(
        "bad-syntax",
        """
        id: broken-yaml
        description: one: two
        turns:
          - user: hello
        probes:
          - {id: p, user: "q?"}
        """,
        line=2,
        message="invalid YAML: mapping values are not allowed here",
    ),
    BadFile(
        "unknown-turn-key",
        """
        id: typo-turn
        turns:
          - user: hello
          - usr: what now?
        probes:
          - {id: p, user: "q?"}
        """,
        line=4,
        message="exactly one of the keys user, assistant, tool, generate",
    ),
    BadFile(
        "unknown-expect-key",
        """
        id: typo-expect
        turns:
          - user: hello
        probes:
          - id: p
            user: "q?"
            expect:
              contans: hello
        """,
        line=8,
        message="unknown key 'contans' in probes[0].expect; expected one of: contains,",
    ),
    BadFile(
        "missing-key",
        """
        id: tool-without-name
        turns:
          - user: hello
          - tool: {output: "a result"}
        probes:
          - {id: p, user: "q?"}
        """,
        line=4,
        message="missing required key 'name' in turns[1].tool",
    ),
    BadFile(
        "unknown-needle",
        """
        id: ghost
        turns:
          - user: hello
        needles:
          - {id: real, turn: 1, text: "The code is 7.", question: "What is the code?", answer: "7"}
        probes:
          - {id: p, needle: ghost}
        """,
        line=7,
        message="probe 'p' names needle 'ghost'; known needles: real",
    ),
]

KNOWN_BUGS: dict[str, str] = {}

VALID = """
    id: valid
    turns:
      - user: "The launch code is ZEBRA-42."
    probes:
      - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}
"""


def with_known_bugs(files: list[BadFile]) -> list[object]:
    return [
        pytest.param(
            f,
            id=f.name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[f.name])]
            if f.name in KNOWN_BUGS
            else [],
        )
        for f in files
    ]


def error_lines(result: pytest.RunResult, bad: BadFile) -> list[str]:
    """Output lines that locate an error in ``bad``'s file."""
    pattern = re.compile(rf"{re.escape(bad.path)}:(\d+):(\d+): ")
    return [line for line in result.outlines if pattern.search(line)]


def assert_reported_once(result: pytest.RunResult, bad: BadFile) -> None:
    text = output(result)
    assert text.count(f"ERROR collecting {bad.path}") == 1, text
    located = [
        line for line in error_lines(result, bad) if not line.startswith("ERROR ")
    ]  # the short summary repeats the first line; count the full report only
    assert len(located) == 1, located
    match = re.search(rf"{re.escape(bad.path)}:(\d+):(\d+): (.*)", located[0])
    assert match is not None
    assert int(match.group(1)) == bad.line, located[0]
    assert int(match.group(2)) >= 1
    assert bad.message in match.group(3)


@pytest.mark.parametrize("bad", with_known_bugs(BAD_FILES))
def test_error_names_file_line_column_and_what_was_expected(ctx, bad):
    ctx.scenario(bad.name, bad.yaml)
    ctx.scenario("valid", VALID)
    result = ctx.run("--ctx-strategy=full")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR)
    assert_reported_once(result, bad)
    assert_no_traceback(result)
    assert result.parseoutcomes()["errors"] == 1


def test_valid_files_still_run_next_to_broken_ones(ctx, xdist_args):
    for bad in BAD_FILES:
        ctx.scenario(bad.name, bad.yaml)
    ctx.scenario("valid", VALID)
    result = ctx.run("--ctx-strategy=full,sliding", *xdist_args)
    assert_no_traceback(result)
    for bad in BAD_FILES:
        assert output(result).count(f"ERROR collecting {bad.path}") == 1
    result.assert_outcomes(passed=2, errors=len(BAD_FILES))
    records = ctx.results()
    assert sorted((r["scenario"], r["strategy"]) for r in records) == [
        ("valid", "full"),
        ("valid", "sliding"),
    ]
    assert result.ret == pytest.ExitCode.TESTS_FAILED
