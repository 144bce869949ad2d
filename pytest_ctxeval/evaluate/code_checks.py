"""Checks on the Python code in an answer, by syntax tree rather than by
text, so `# don't import requests` in a comment is not an import.

The answer is untrusted text: code longer than MAX_CODE_CHARS is not parsed
(UncheckableAnswer), and code the parser gives up on (nested too deeply,
null bytes) is code that does not parse, as it would be for Python itself."""

from __future__ import annotations

import ast
import re

from ..scenario.schema import PythonCheck
from .uncheckable import UncheckableAnswer

# Enough for any program an answer would hold; ast.parse takes time and
# memory that grow with the text, and a runaway answer can be megabytes.
MAX_CODE_CHARS = 100_000
# What ast.parse raises on text that is no Python it can handle:
# SyntaxError; ValueError (null bytes, on some Python versions); RecursionError and
# MemoryError on nesting thousands deep ("-" * 60_000 + "1").
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)

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
    """Every module imported by the answer's code; None if no code parses.
    Raises UncheckableAnswer when the code is longer than MAX_CODE_CHARS."""
    blocks = code_blocks(answer)
    size = sum(len(block) for block in blocks)
    if size > MAX_CODE_CHARS:
        raise UncheckableAnswer(
            f"python check: the answer's code is {size:,} chars, more than the "
            f"{MAX_CODE_CHARS:,} a code check reads"
        )
    modules: set[str] = set()
    parsed = False
    for block in blocks:
        try:
            tree = ast.parse(block)
        except _UNPARSABLE:
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
