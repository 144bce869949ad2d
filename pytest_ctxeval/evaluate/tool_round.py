"""One tool call of a model's answer, read the same way by the probe loop and
by a rollout: its arguments as a JSON object or an error the model sees, and
the tool message that answers it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    raw: str  # the arguments as the model wrote them
    args: dict[str, Any] | None  # None when ``raw`` is no JSON object
    error: str | None  # what the model is told then, else None


def read_tool_call(call: dict[str, Any]) -> ToolCall:
    name = call["function"]["name"]
    raw = call["function"].get("arguments") or "{}"
    try:
        args = json.loads(raw)
        if not isinstance(args, dict):
            raise ValueError("arguments are not a JSON object")
    except ValueError as exc:
        return ToolCall(name, raw, None, f"error: malformed arguments for {name}: {exc}")
    return ToolCall(name, raw, args, None)


def not_offered(name: str) -> str:
    return f"error: no tool named {name!r} is offered"


def tool_reply(call: dict[str, Any], name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call["id"], "name": name, "content": content}
