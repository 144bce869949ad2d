"""Tool stubs: the tools a rollout offers the model, answered from the
scenario (a fixed output, or outputs keyed by one argument's value); a
``writes`` stub keeps each file the model writes for the final artifact."""

from __future__ import annotations

from typing import Any

from ..scenario.rollout_spec import ToolStub


class ToolStubs:
    """One rollout's stubs: fresh per rollout, since written files are state."""

    def __init__(self, stubs: list[ToolStub]) -> None:
        self._stubs = {stub.name: stub for stub in stubs}
        self.files: dict[str, str] = {}

    @property
    def names(self) -> set[str]:
        return set(self._stubs)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [_definition(stub) for stub in self._stubs.values()]

    def answer(self, name: str, args: dict[str, Any]) -> str:
        stub = self._stubs.get(name)
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
