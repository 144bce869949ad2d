"""Checks on the Python code in an answer, by syntax tree rather than by
text, so `# don't import requests` in a comment is not an import."""

from __future__ import annotations

import ast
import re

from ..scenario.schema import PythonCheck

# Every fenced block, in order, with its language: matching them one after
# the other pairs each opening fence with its own closing fence.
_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_PYTHON = {"", "python", "py", "python3"}


def code_blocks(answer: str) -> list[str]:
    fenced = list(_FENCE.finditer(answer))
    if not fenced:
        return [answer]
    return [m.group(2) for m in fenced if m.group(1).lower() in _PYTHON]


def imported_modules(answer: str) -> set[str] | None:
    """Every module imported by the answer's code; None if no code parses."""
    modules: set[str] = set()
    parsed = False
    for block in code_blocks(answer):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        if not tree.body:
            continue  # an empty answer is no code, and must not pass a forbid check
        parsed = True
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module)
                # `from os import path` may import the submodule os.path.
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules if parsed else None


def _imports(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def check_python(answer: str, check: PythonCheck) -> list[str]:
    modules = imported_modules(answer)
    if modules is None:
        return ["contains Python code that parses"]
    failed = [
        f"python code does not import {name!r}"
        for name in check.forbid_imports
        if _imports(modules, name)
    ]
    failed += [
        f"python code imports {name!r}"
        for name in check.require_imports
        if not _imports(modules, name)
    ]
    return failed
