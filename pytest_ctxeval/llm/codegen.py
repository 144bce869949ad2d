"""How the oracle "writes code": it follows the library rules it can see and
otherwise makes the obvious choice, as a real model would.

A rule like "never use requests; use urllib3" only changes the code while the
rule is in the window, which is what constraint probes measure.  The rules
show in the code only through what it imports: the answer never quotes the
rules or the task back, so an expectation cannot pass on an echo.

What counts as a library rule, per user or system message:

- forbidden: "never use X", "do not / don't / must not use X", "avoid X",
  and the X of "use Y, not X" / "use Y instead of X" / "use Y rather than X";
- required: "always / only / must / should / instead use Y", the Y of those
  "use Y, not X" forms, and a bare "use Y" that starts the clause right
  after one that forbids using something ("Never use X; use Y.", "Don't use
  X, use Y instead.") or the sentence right after it ("Never use X. Use Y.").
  It is lexical: "Never use X. Use tabs." makes it import ``tabs``.
"""

from __future__ import annotations

import re

from .text import sentences

_NAME = r"(?:the\s+)?`?([A-Za-z_][\w.]*)`?"
_REQUIRE = re.compile(
    rf"\b(?:always|only|must|should|instead)\s+(?:use|import)\s+{_NAME}", re.IGNORECASE
)
_FORBID = re.compile(
    r"\b(?:never|do not|don't|must not|avoid)\s+(?:use|using|import|importing)?\s*"
    rf"{_NAME}",
    re.IGNORECASE,
)
# Only a sentence that forbids using something makes the next one's "Use Y"
# a rule: "Do not reply in French. Use short sentences." requires nothing.
_FORBID_USE = re.compile(r"\b(?:never|do not|don't|must not)\s+(?:use|import)\b", re.IGNORECASE)
# "use Y, not X", "use Y instead of X", "use Y rather than X"
_USE_NOT = re.compile(
    rf"\buse\s+{_NAME}(?:\s+library)?\s*(?:,\s*|\s+)(?:and\s+)?(?:not|instead\s+of|rather\s+than)"
    rf"\s+(?:using\s+)?{_NAME}",
    re.IGNORECASE,
)
# "Never use X; use Y", "Don't use X, but use Y": the clause right after the
# forbidding one (a few words of it at most) starts with "use Y".
_FORBID_THEN_USE = re.compile(
    r"\b(?:never|do not|don't|must not)\s+(?:use|import)\s+[^\s;,:.…]+(?:\s+[^\s;,:.…]+){0,5}"
    r"\s*[;,:]\s*"
    rf"(?:and\s+|but\s+|then\s+|instead\s+)?use\s+{_NAME}",
    re.IGNORECASE,
)
# "Never use X. Use Y.": a sentence that starts with "use Y".
_SENTENCE_USE = re.compile(rf"^use\s+{_NAME}", re.IGNORECASE)
# The obvious library for a task, when nothing visible says otherwise.
_DEFAULTS = (
    (re.compile(r"\b(download|url|http|fetch|web|api|request)", re.I), "requests"),
    (re.compile(r"\b(csv|spreadsheet)", re.I), "csv"),
    (re.compile(r"\b(json)", re.I), "json"),
    (re.compile(r"\b(date|time|timestamp)", re.I), "datetime"),
    (re.compile(r"\b(file|path|directory|folder)", re.I), "pathlib"),
)
_NOT_LIBRARIES = {"the", "a", "an", "it", "this", "that", "library", "libraries", "python"}


def libraries(instructions: list[str]) -> tuple[list[str], set[str]]:
    """Libraries the visible rules require, and the ones they forbid.

    ``instructions``: the texts rules can be read in, one per message (or
    tool-definition line); a sentence that starts "Use Y" only counts right
    after a sentence of the same text that forbids using something."""
    required: list[str] = []
    forbidden: set[str] = set()
    for text in instructions:
        after_forbid = False
        for sentence in sentences(text):
            forbid = _names(_FORBID.findall(sentence))
            wanted = _names(_REQUIRE.findall(sentence))
            for use, instead_of in _USE_NOT.findall(sentence):
                wanted += _names([use])
                forbid += _names([instead_of])
            forbids_use = _FORBID_USE.search(sentence) is not None
            wanted += _names(_FORBID_THEN_USE.findall(sentence))
            if after_forbid:
                wanted += _names(_SENTENCE_USE.findall(sentence))
            forbidden.update(name.lower() for name in forbid)
            required.extend(name for name in wanted if name not in required)
            after_forbid = forbids_use
    return [r for r in required if r.lower() not in forbidden], forbidden


def _names(matches: list[str]) -> list[str]:
    # A name at the end of a sentence ("always use urllib3.") keeps no dot.
    names = (m.rstrip(".") for m in matches)
    return [n for n in names if n and n.lower() not in _NOT_LIBRARIES]


def write_code(task: str, instructions: list[str]) -> str:
    required, forbidden = libraries(instructions)
    imports = list(required)
    if not imports:
        imports = [
            lib for pattern, lib in _DEFAULTS if pattern.search(task) and lib not in forbidden
        ][:1]
    body = [f"import {lib}" for lib in imports]
    body += ["", "", "def solution(*args, **kwargs):"]
    body.append(
        f"    return {imports[0]}  # placeholder" if imports else "    raise NotImplementedError"
    )
    return "```python\n" + "\n".join(body) + "\n```"
