"""Record/replay of real model calls ("cassettes").

Each request is keyed by the sha256 of its canonical JSON (sorted keys):
model, messages, tools and the sampling parameters.  Where the request is
sent (api_base) and how it is authenticated are not part of it, so one
cassette serves every server of the same model, and no secret can reach a
file: what is stored is built here from those four parts, never from the
keyword arguments handed to litellm; and what is written is scrubbed (see
``redact``), for a key a server or model echoed into the text.

One pretty-printed JSON file per request, named by the hash prefix, holds
the request (for humans reading a PR diff) and the response.  Same request
and response, same bytes.  Files are written whole or not at all (a
temporary file, then a rename), and checked field by field when read back:
a cassette is text from outside like any server's answer.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..redact import scrub_data
from ..textcap import surrogate_problem

RecordMode = Literal["none", "new", "all"]
RECORD_MODES: tuple[str, ...] = ("none", "new", "all")
FORMAT_VERSION = 1
# 16 hex digits (64 bits) keep file names short; the full hash inside the
# file is checked on load, so a prefix collision is a miss, never a wrong answer.
NAME_DIGITS = 16

logger = logging.getLogger("pytest_ctxeval.models")


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


class CassetteError(ValueError):
    """A cassette that cannot be replayed: not JSON (under ``none``), or a
    field of the wrong type.  The message names the file and the field."""


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
        """The stored response for ``key``, checked field by field, or None.
        ``all`` never replays.

        A file that is not JSON (cut off mid-write by an older version, or
        hand-edited) is a miss under ``new``, recorded again over it, and a
        CassetteError under ``none``.  A response whose fields have the wrong
        types is a CassetteError in every mode: replaying it would crash
        scoring, and recording over it would hide the edit."""
        if self.mode == "all":
            return None
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:  # UnicodeDecodeError included
            if self.mode == "new":
                logger.warning("cassette %s is not valid JSON (%s); recording it again", path, exc)
                return None
            raise CassetteError(
                f"cassette {path} is not valid JSON ({exc}); record it again with --ctx-record=new"
            ) from None
        if not isinstance(data, dict):
            raise CassetteError(f"cassette {path}: expected a JSON object, got {_kind(data)}")
        if data.get("key") != key:
            return None  # a file-name prefix collision: not this request's answer
        response = data.get("response")
        problem = response_problem(response)
        if problem is not None:
            raise CassetteError(
                f"cassette {path}: {problem}; fix the file, or delete it to record it again"
            )
        assert isinstance(response, dict)  # response_problem checked it
        return response

    def save(self, key: str, request: dict[str, Any], response: dict[str, Any]) -> Path:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Scrubbed as a whole (the request too): a secret a model echoed may
        # sit in a later request's messages.  The key was hashed before.
        stored = scrub_data({"request": request, "response": response}, scenario=False)
        text = json.dumps(
            {"format": FORMAT_VERSION, "key": key, **stored},
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


def response_problem(response: Any) -> str | None:
    """What is wrong with a recorded (or live) response's types, naming the
    field (``response.content is a number (5), expected a string or null``);
    None when every field has the type a recorded answer has."""

    def bad(field: str, value: Any, expected: str) -> str:
        return f"{field} is {_kind(value)}, expected {expected}"

    if not isinstance(response, dict):
        return bad("response", response, "an object")
    unicode = _invalid_unicode(response, "response")
    if unicode is not None:
        return unicode
    content = response.get("content")
    if content is not None and not isinstance(content, str):
        return bad("response.content", content, "a string or null")
    finish = response.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        return bad("response.finish_reason", finish, "a string or null")
    cost = response.get("cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        return bad("response.cost_usd", cost, "a number or null")
    usage = response.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return bad("response.usage", usage, "an object or null")
    for name, count in (usage or {}).items():
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            return bad(f"response.usage.{name}", count, "a whole number or null")
    calls = response.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return bad("response.tool_calls", calls, "a list or null")
    for i, call in enumerate(calls or []):
        where = f"response.tool_calls[{i}]"
        if not isinstance(call, dict):
            return bad(where, call, "an object")
        if not isinstance(call.get("id"), str):
            return bad(f"{where}.id", call.get("id"), "a string")
        function = call.get("function")
        if not isinstance(function, dict):
            return bad(f"{where}.function", function, "an object")
        if not isinstance(function.get("name"), str):
            return bad(f"{where}.function.name", function.get("name"), "a string")
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            return bad(f"{where}.function.arguments", arguments, "a string or null")
    return None


def _invalid_unicode(value: Any, where: str) -> str | None:
    """The first text in ``value`` that is not valid Unicode, named by its field."""
    if isinstance(value, str):
        problem = surrogate_problem(value)
        return f"{where} holds {problem}, which is not valid Unicode" if problem else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _invalid_unicode(
            item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}"
        )
        if found is not None:
            return found
    return None


def _kind(value: Any) -> str:
    """How a JSON value is named in an error: 'a number (5)', 'a list', 'null'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
