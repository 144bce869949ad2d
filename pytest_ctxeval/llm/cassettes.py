"""Record/replay of real model calls ("cassettes").

Each request is keyed by the sha256 of its canonical JSON (sorted keys):
model, messages, tools and the sampling parameters.  Where the request is
sent (api_base) and how it is authenticated are not part of it, so one
cassette serves every server of the same model, and no secret can reach a
file: what is stored is built here from those four parts, never from the
keyword arguments handed to litellm.

One pretty-printed JSON file per request, named by the hash prefix, holds
the request (for humans reading a PR diff) and the response.  Same request
and response, same bytes.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

RecordMode = Literal["none", "new", "all"]
RECORD_MODES: tuple[str, ...] = ("none", "new", "all")
FORMAT_VERSION = 1
# 16 hex digits (64 bits) keep file names short; the full hash inside the
# file is checked on load, so a prefix collision is a miss, never a wrong answer.
NAME_DIGITS = 16


@dataclass(frozen=True)
class CallContext:
    """Who is asking: named in errors so a cassette miss can be traced to an item."""

    scenario: str | None = None
    strategy: str | None = None
    probe: str | None = None
    purpose: str = ""

    def describe(self) -> str:
        parts = [
            f"{label} {value!r}"
            for label, value in (
                ("scenario", self.scenario),
                ("strategy", self.strategy),
                ("probe", self.probe),
            )
            if value is not None
        ]
        if self.purpose:
            parts.append(f"({self.purpose})")
        return ", ".join(parts) or "(no context)"


# The runner sets this around its model calls; ModelClient reads it when no
# explicit context is passed, so code between them (probe loop, strategies
# that summarise) needs no extra parameter.  A ContextVar is per thread, which
# keeps concurrent probes apart.
_current: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "ctxeval_call_context", default=None
)


@contextmanager
def call_context(context: CallContext) -> Iterator[None]:
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)


def current_context() -> CallContext | None:
    return _current.get()


class CassetteMiss(LookupError):
    """A request with no cassette while recording is off (``--ctx-record=none``)."""


def build_request(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
) -> dict[str, Any]:
    """The stored and hashed request.  ``params`` are sampling parameters only
    (temperature, response_format, tool_choice, ...), never transport settings."""
    return {
        "model": model,
        "messages": messages,
        "tools": tools or [],
        "params": {k: v for k, v in params.items() if v is not None},
    }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def request_hash(request: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(request).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CassetteStore:
    directory: Path
    mode: RecordMode = "new"

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key[:NAME_DIGITS]}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The stored response for ``key``, or None.  ``all`` never replays."""
        if self.mode == "all":
            return None
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise CassetteMiss(f"cassette {path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        response = data.get("response")
        return response if isinstance(response, dict) else None

    def save(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> Path:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {"format": FORMAT_VERSION, "key": key, "request": request, "response": response},
            sort_keys=True,
            indent=2,
            ensure_ascii=False,
            default=str,
        )
        # Write-then-rename: xdist workers and threads may record the same
        # request at once, and a reader must never see half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def miss(self, key: str, request: dict[str, Any], context: CallContext | None) -> CassetteMiss:
        who = context.describe() if context is not None else "(no context)"
        return CassetteMiss(
            f"no recorded response for request {key[:NAME_DIGITS]} of model "
            f"{request['model']!r} ({who}); expected {self.path_for(key)}. "
            "--ctx-record=none replays only: record it with --ctx-record=new"
        )
