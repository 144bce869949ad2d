"""Tool stubs: the tools a rollout offers the model, answered from the
scenario (a fixed output, or outputs keyed by one argument's value); a
``writes`` stub keeps each file the model writes for the final artifact."""

from __future__ import annotations

import json
from typing import Any

from ...messages import content_text
from ...scenario.rollout_spec import ToolStub

# A recorded tool call: (tool name, its arguments as sorted JSON, the output).
Recorded = tuple[str, str, str]


class ToolStubs:
    """One rollout's stubs: fresh per rollout, since written files are state.

    ``recorded``: the tool outputs of the scenario's own session (an imported
    trace's, say).  A tool the scenario calls but declares no stub for is
    offered too, and answered from them: the output recorded for the same
    arguments, else the tool's next recorded output in order, else its last."""

    def __init__(self, stubs: list[ToolStub], recorded: list[Recorded] | None = None) -> None:
        self._stubs = {stub.name: stub for stub in stubs}
        self.files: dict[str, str] = {}
        self._recorded: dict[str, list[tuple[str, str]]] = {}
        for name, args, output in recorded or []:
            if name not in self._stubs:
                self._recorded.setdefault(name, []).append((args, output))
        self._next: dict[str, int] = {}

    @property
    def names(self) -> set[str]:
        return set(self._stubs) | set(self._recorded)

    @property
    def tools(self) -> list[dict[str, Any]]:
        recorded = [_recorded_definition(name) for name in sorted(self._recorded)]
        return [_definition(stub) for stub in self._stubs.values()] + recorded

    def answer(self, name: str, args: dict[str, Any]) -> str:
        stub = self._stubs.get(name)
        if stub is None and name in self._recorded:
            return self._replay(name, args)
        if stub is None:
            return f"error: no tool named {name!r} is offered"
        if stub.writes:
            path, content = args.get("path"), args.get("content")
            if not isinstance(path, str) or not isinstance(content, str):
                return f"error: {name} needs string arguments 'path' and 'content'"
            self.files[path] = content
            if stub.output is None:
                return f"wrote {len(content):,} characters to {path}"
        if stub.outputs is not None and stub.key is not None:
            value = args.get(stub.key)
            found = stub.outputs.get(str(value)) if value is not None else None
            if found is not None:
                return found
            if stub.default is not None:
                return stub.default
            known = ", ".join(sorted(stub.outputs))
            return f"error: {name}: no output for {stub.key}={value!r}; known: {known}"
        return stub.output or ""

    def _replay(self, name: str, args: dict[str, Any]) -> str:
        calls = self._recorded[name]
        wanted = json.dumps(args, sort_keys=True)
        same = next((output for given, output in calls if given == wanted), None)
        if same is not None:
            return same
        at = self._next.get(name, 0)
        self._next[name] = at + 1
        return calls[min(at, len(calls) - 1)][1]


def recorded_outputs(messages: list[dict[str, Any]]) -> list[Recorded]:
    """Each tool result of a session with the call it answers."""
    calls: dict[str, tuple[str, str]] = {}
    found: list[Recorded] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                args = json.dumps(json.loads(function.get("arguments") or "{}"), sort_keys=True)
            except ValueError:
                args = str(function.get("arguments"))
            calls[str(call.get("id"))] = (str(function.get("name")), args)
        if message.get("role") == "tool":
            name, args = calls.get(str(message.get("tool_call_id")), (message.get("name"), "{}"))
            found.append((str(name), args, content_text(message)))
    return found


def _recorded_definition(name: str) -> dict[str, Any]:
    description = f"The {name} tool (answered with the outputs the scenario recorded)."
    parameters = {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _definition(stub: ToolStub) -> dict[str, Any]:
    parameters = stub.parameters
    if parameters is None:
        if stub.writes:
            properties = {"path": {"type": "string"}, "content": {"type": "string"}}
            parameters = {
                "type": "object",
                "properties": properties,
                "required": ["path", "content"],
            }
        elif stub.key is not None:
            parameters = {
                "type": "object",
                "properties": {stub.key: {"type": "string"}},
                "required": [stub.key],
            }
        else:
            parameters = {"type": "object", "properties": {}}
    description = stub.description or ("Write a file." if stub.writes else f"The {stub.name} tool.")
    return {
        "type": "function",
        "function": {"name": stub.name, "description": description, "parameters": parameters},
    }
