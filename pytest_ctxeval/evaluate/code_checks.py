"""Checks on the Python code in an answer, by syntax tree rather than by
text, so `# don't import requests` in a comment is not an import."""

from __future__ import annotations

import ast
import re

from ..scenario.schema import PythonCheck

_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def code_blocks(answer: str) -> list[str]:
    blocks = _FENCE.findall(answer)
    return blocks if blocks else [answer]


def imported_modules(answer: str) -> set[str] | None:
    """Every module imported by the answer's code; None if no code parses."""
    modules: set[str] = set()
    parsed = False
    for block in code_blocks(answer):
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        parsed = True
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module)
    return modules if parsed else None


def _imports(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def check_python(answer: str, check: PythonCheck) -> list[str]:
    modules = imported_modules(answer)
    if modules is None:
        return ["contains Python code that parses"]
    failed = [f"python code does not import {name!r}" for name in check.forbid_imports if _imports(modules, name)]
    failed += [f"python code imports {name!r}" for name in check.require_imports if not _imports(modules, name)]
    return failed
