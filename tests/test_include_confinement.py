"""``!include`` stays inside the scenario's own tree: never above it, never
into ``.git/`` or another dot-directory, never through a symbolic link that
points outside.  A pull request can add a scenario file; a CI checkout keeps
an authorization header in ``.git/config``."""

from __future__ import annotations

import os

import pytest
from conftest import assert_no_traceback, output

from pytest_ctxeval.report.page_data import unpacked_text

SECRET = "AUTHORIZATION: basic c2VjcmV0LXRva2VuLWZyb20tY2k="

SCENARIO = """\
id: evil
system: !include {target}
turns:
  - user: "The launch code is ZEBRA-42."
probes:
  - {{id: p, user: "What is the launch code?", expect: {{contains: ZEBRA-42}}}}
"""


def _plant(ctx, name: str) -> str:
    """Lay out what the reference ``name`` points at; the reference to use."""
    root = ctx.path
    ctx.write(".git/config", f'[http "https://github.com/"]\n\textraheader = {SECRET}\n')
    if name == "parent":
        (root.parent / "outside-secret.txt").write_text(SECRET, encoding="utf-8")
        return "../outside-secret.txt"
    if name == "git-config":
        return ".git/config"
    if name == "dot-directory":
        ctx.write(".secrets/token.txt", SECRET)
        return ".secrets/token.txt"
    if name == "dot-through-parts":
        ctx.write("parts/readme.txt", "fine")
        return "parts/../.git/config"
    if name == "symlink-outside":
        outside = root.parent / "outside-target.txt"
        outside.write_text(SECRET, encoding="utf-8")
        os.symlink(outside, root / "notes.txt")
        return "notes.txt"
    if name == "symlink-to-git":
        os.symlink(root / ".git" / "config", root / "config.txt")
        return "config.txt"
    raise AssertionError(name)


CASES = [
    "parent",
    "git-config",
    "dot-directory",
    "dot-through-parts",
    "symlink-outside",
    "symlink-to-git",
]


@pytest.mark.parametrize("case", CASES)
def test_an_include_from_a_yaml_at_the_repository_root_stays_inside(ctx, case):
    target = _plant(ctx, case)
    ctx.write("evil.yaml", SCENARIO.format(target=target))
    result = ctx.run(".", "--ctx-strategy=full")
    text = output(result)
    assert_no_traceback(result)
    assert result.ret != 0
    # One error naming the file and line, the reference, and the root it had to stay in.
    line = next(line for line in result.outlines if "evil.yaml:2:" in line)
    assert f"!include {target!r}" in line, line
    assert str(ctx.path.resolve()) in line, line
    assert SECRET not in text
    report = ctx.path / "reports" / "ctxeval.html"
    assert not report.exists() or SECRET not in unpacked_text(report.read_text(encoding="utf-8"))


def test_an_include_inside_the_tree_still_loads(ctx):
    ctx.write("parts/system.txt", "You are terse.")
    os.symlink(ctx.path / "parts" / "system.txt", ctx.path / "system-link.txt")
    ctx.write("good.yaml", SCENARIO.format(target="system-link.txt"))
    result = ctx.run(".", "--ctx-strategy=full")
    assert result.ret == 0, output(result)
    assert ctx.results()[0]["verdict"] == "pass"
