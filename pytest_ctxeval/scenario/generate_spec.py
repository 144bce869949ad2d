"""What a ``generate:`` block of a scenario asks for: the generator's kind,
its seed and its size knobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

GeneratorKind = Literal[
    "chitchat",
    "coding_session",
    "json_rows",
    "json_api",
    "spans",
    "log_lines",
    "file_read",
    "test_run",
    "shell",
    "lint",
    "prose",
]


class GenerateSpec(BaseModel):
    """A seeded generator; same seed, same output."""

    model_config = ConfigDict(extra="forbid")

    kind: GeneratorKind
    seed: int = 0
    # No upper bounds here: the loader bounds the estimated total of a file
    # (CTXEVAL_MAX_GENERATED_TOKENS), so one limit governs all the sizes.
    turns: int = Field(default=4, ge=1, description="chitchat / coding_session: exchanges")
    rows: int = Field(default=50, ge=1, description="items: rows, lines, spans, tests")
    tokens: int | None = Field(
        default=None, ge=1, description="approximate size in tokens (overrides rows)"
    )
    failures: int = Field(default=1, ge=0, description="test_run: failing tests")
    words: int = Field(default=200, ge=1, description="prose: words")
