"""The ``rollout:`` block of a scenario: the scripted user's follow-ups,
the tools the model may call (stubs with fixed answers) and the bounds of
a live session.

In rollout mode the model under test writes every assistant turn; user
turns come from the scenario, the tool outputs from these stubs, so a
rollout repeats exactly on a deterministic model."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Mode = Literal["replay", "rollout"]
# A live session is bounded: a model that keeps calling tools, or a script
# that never ends, is an error on its item, not a hung run.
DEFAULT_MAX_TURNS = 200
DEFAULT_MAX_TOOL_ROUNDS = 4
MAX_TURNS_LIMIT = 2_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolStub(_Strict):
    """A tool the model may call in a rollout, answered without running anything."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$", description="the function name")
    description: str = Field(default="", description="shown to the model with the tool")
    parameters: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema of the arguments (default: an object with the 'key' "
        "argument, or with path and content for a write_file stub)",
    )
    output: str | None = Field(default=None, description="the fixed answer to every call")
    key: str | None = Field(
        default=None, description="the argument whose value picks the answer from 'outputs'"
    )
    outputs: dict[str, str] | None = Field(
        default=None, description="answers keyed by the value of the 'key' argument"
    )
    default: str | None = Field(
        default=None, description="the answer when 'outputs' has no entry for the value"
    )
    writes: bool = Field(
        default=False,
        description="a write_file stub: each call's 'path' and 'content' become a file of "
        "the rollout's final artifact",
    )

    @model_validator(mode="after")
    def _one_answer(self) -> ToolStub:
        if self.outputs is not None and self.key is None:
            raise ValueError("'outputs' needs 'key': the argument whose value picks the answer")
        if self.key is not None and self.outputs is None:
            raise ValueError("'key' needs 'outputs': the answers keyed by that argument's value")
        if not self.writes and self.output is None and self.outputs is None:
            raise ValueError(
                f"tool stub {self.name!r} has no answer; expected 'output', "
                "'key' with 'outputs', or 'writes: true'"
            )
        return self


class RolloutSpec(_Strict):
    """How a scenario runs as a live session (``mode: rollout`` or ``--ctx-mode=rollout``)."""

    user: list[str] = Field(
        default_factory=list,
        description="follow-ups of a scripted user, each sent when the previous answer "
        "arrives, after the user turns of 'turns'",
    )
    tools: list[ToolStub] = Field(default_factory=list, description="tools the model may call")
    probe_turns: dict[str, int] = Field(
        default_factory=dict,
        description="probe id -> the user turn (1-based) it is asked as; the other probes "
        "come after the script",
    )
    max_turns: int = Field(
        default=DEFAULT_MAX_TURNS,
        ge=1,
        le=MAX_TURNS_LIMIT,
        description="the most user turns a rollout may have",
    )
    max_tool_rounds: int = Field(
        default=DEFAULT_MAX_TOOL_ROUNDS,
        ge=0,
        le=32,
        description="rounds of tool calls answered in one turn before the model must answer",
    )

    @model_validator(mode="after")
    def _distinct_tools(self) -> RolloutSpec:
        names = [t.name for t in self.tools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"tool stub names must be distinct; given twice: {', '.join(twice)}")
        for probe, turn in self.probe_turns.items():
            if turn < 1:
                raise ValueError(f"probe_turns: {probe}: turn {turn}; expected a turn >= 1")
        return self
