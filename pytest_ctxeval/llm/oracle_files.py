"""How the oracle writes a file when it is given a tool for it.

A coding task that names a file ("Write fetch.py that downloads a URL.")
is answered with a call to the offered ``write_file`` tool, the code as its
content; once the tool has answered, the oracle says which file it wrote.
Without such a tool, or for a task naming no file, nothing changes: the
code is the answer."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

WRITE_TOOL = "write_file"
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.(?:py|txt|md|json|ya?ml|toml|cfg|ini|sh))\b")


def file_reply(
    messages: list[dict[str, Any]],
    question_at: int | None,
    tools: list[dict[str, Any]],
    question: str,
    code: str,
) -> tuple[str | None, list[dict[str, Any]]] | None:
    """(content, tool calls) of the reply that writes the file; None when
    the oracle should answer with the code itself."""
    if question_at is None or not any(_name(tool) == WRITE_TOOL for tool in tools):
        return None
    found = _PATH.search(question)
    if found is None:
        return None
    path = found.group(1)
    after = messages[question_at + 1 :]
    if any(m.get("role") == "tool" and m.get("name") == WRITE_TOOL for m in after):
        return f"Wrote {path}.", []
    content = code.removeprefix("```python\n").removesuffix("\n```") + "\n"
    call_id = "call_" + hashlib.sha256(f"{path}|{question}".encode()).hexdigest()[:12]
    arguments = json.dumps({"path": path, "content": content}, sort_keys=True)
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": WRITE_TOOL, "arguments": arguments},
    }
    return None, [call]


def _name(tool: dict[str, Any]) -> str | None:
    function = tool.get("function")
    return function.get("name") if isinstance(function, dict) else None
