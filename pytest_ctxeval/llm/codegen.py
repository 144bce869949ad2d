"""How the oracle "writes code": it follows the library rules it can see and
otherwise makes the obvious choice, as a real model would.

A rule like "never use requests; always use urllib3" only changes the code
while the rule is in the window, which is what constraint probes measure.
"""

from __future__ import annotations

import re

_REQUIRE = re.compile(
    r"\b(?:always|only|must|should|instead)\s+(?:use|import)\s+(?:the\s+)?`?([A-Za-z_][\w.]*)`?",
    re.IGNORECASE,
)
_FORBID = re.compile(
    r"\b(?:never|do not|don't|must not|avoid)\s+(?:use|using|import|importing)?\s*(?:the\s+)?"
    r"`?([A-Za-z_][\w.]*)`?",
    re.IGNORECASE,
)
# The obvious library for a task, when nothing visible says otherwise.
_DEFAULTS = (
    (re.compile(r"\b(download|url|http|fetch|web|api|request)", re.I), "requests"),
    (re.compile(r"\b(csv|spreadsheet)", re.I), "csv"),
    (re.compile(r"\b(json)", re.I), "json"),
    (re.compile(r"\b(date|time|timestamp)", re.I), "datetime"),
    (re.compile(r"\b(file|path|directory|folder)", re.I), "pathlib"),
)
_NOT_LIBRARIES = {"the", "a", "an", "it", "this", "that", "library", "libraries", "python"}


def libraries(rules: list[str]) -> tuple[list[str], set[str]]:
    """Libraries the visible rules require, and the ones they forbid."""
    required: list[str] = []
    forbidden: set[str] = set()
    for rule in rules:
        # A name at the end of a sentence ("always use urllib3.") keeps no dot.
        forbid = [m.rstrip(".") for m in _FORBID.findall(rule)]
        forbidden.update(m.lower() for m in forbid if m.lower() not in _NOT_LIBRARIES)
        for match in (m.rstrip(".") for m in _REQUIRE.findall(rule)):
            if match.lower() not in _NOT_LIBRARIES and match not in required:
                required.append(match)
    return [r for r in required if r.lower() not in forbidden], forbidden


def write_code(task: str, rules: list[str]) -> str:
    required, forbidden = libraries(rules)
    imports = list(required)
    if not imports:
        imports = [
            lib for pattern, lib in _DEFAULTS if pattern.search(task) and lib not in forbidden
        ][:1]
    name = _function_name(task)
    body = [f"import {lib}" for lib in imports]
    body += ["", "", f"def {name}(*args, **kwargs):", f'    """{task.strip()[:80]}"""']
    body.append(
        f"    return {imports[0]}  # placeholder" if imports else "    raise NotImplementedError"
    )
    return "```python\n" + "\n".join(body) + "\n```"


def _function_name(task: str) -> str:
    words = re.findall(r"[a-z]+", task.lower())
    verbs = [
        w for w in words if w not in {"write", "a", "an", "the", "function", "that", "and", "me"}
    ]
    return "_".join(verbs[:3]) or "solution"
