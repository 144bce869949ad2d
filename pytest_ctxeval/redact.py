"""Secrets out of everything the plugin stores or shows.

A server may echo the request's Authorization header in an error body, and a
model may repeat a key it was shown; either would otherwise reach
results.jsonl, the report, a cassette or the terminal.  Replaced with
``[redacted]`` wherever text is stored or shown:

- the values of key-like environment variables (``OPENAI_API_KEY``,
  ``GITHUB_TOKEN``, ``DB_PASSWORD``, ...; values of 8 characters or more),
- every key a ModelClient was given explicitly (see ``register_secret``),
- values a scenario marks ``secret: true`` (not in cassettes: a replay
  scores what the live run scored).

What only looks like a key (``Authorization: Bearer ...``, ``sk-...``,
``ghp_...``, ``api-key: ...``) is replaced by ``scrub`` in errors and in what
a server says about a request; an answer is scored, stored and shown as it
is, because a key-like fact a scenario plants is exactly what its probe
checks.  Nothing is replaced before scoring but the environment's and the
client's own keys, so a replayed cassette holds what a live run scored.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

REDACTED = "[redacted]"
# Shorter values ("1", "true", "dev") would scrub ordinary words from answers.
MIN_SECRET_CHARS = 8

_SECRET_SUFFIXES = (
    "_API_KEY",
    "_KEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PWD",
    "_CREDENTIALS",
)
_SECRET_PARTS = ("API_KEY", "APIKEY", "SECRET", "PASSWORD", "ACCESS_TOKEN", "AUTH_TOKEN")
_SECRET_NAMES = frozenset({"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD"})

# By shape, for keys that are in no variable this process can see.
_SHAPES = (
    # "Authorization: Bearer xyz", "authorization": "Basic xyz": any length, the header
    # says so; up to a space, quote or separator, and not the full stop of a sentence.
    re.compile(
        r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+|token\s+)?)"
        r"[^\s\"',;]*[^\s\"',;.]"
    ),
    # A bare "Bearer <token>": long and with a digit, so "Bearer authentication" stays.
    re.compile(r"(\bBearer\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/-]{16,}=*"),
    # Azure's and Anthropic's header, and "api_key=..." in a URL or a dump.
    re.compile(r"(?i)(\b(?:x-)?api[-_]?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._~+/-]{16,}=*"),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
    # GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab, Slack and AWS keys.
    re.compile(r"()\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    re.compile(r"()\b(?:glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}\b)"),
)
# Every shape above needs one of these words, in any case: a text with none
# of them, and with no known secret value, is left as it is.
_SHAPE_WORDS = (
    *("authorization", "bearer", "sk-", "github_pat_", "glpat-", "xox", "akia"),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
)  # and "api key", spelled as below
_API_KEY_WORD = re.compile(r"api[-_]?key")
# The only characters beyond ASCII that re, ignoring case, takes for an ASCII letter.
_LETTER_LOOKALIKES = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}

_explicit: set[str] = set()
# Values a scenario marks ``secret: true``: hidden wherever results are shown,
# never in cassettes (a replay must score what the live run scored).
_scenario: set[str] = set()
_explicit_lock = threading.Lock()
# A scenario's secret may be short ("hunter2"); shorter than this would garble text.
MIN_SCENARIO_SECRET_CHARS = 4


def register_secret(value: str | None) -> None:
    """Scrub ``value`` from now on (an api_key handed to a client, not in the environment)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _explicit_lock:
            _explicit.add(value)


def register_scenario_secret(value: str) -> None:
    """Hide ``value`` in results, reports and the terminal from now on: a
    scenario marked it secret.  It is still scored as it is."""
    if len(value) >= MIN_SCENARIO_SECRET_CHARS:
        with _explicit_lock:
            _scenario.add(value)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return (
        upper in _SECRET_NAMES
        or upper.endswith(_SECRET_SUFFIXES)
        or any(part in upper for part in _SECRET_PARTS)
    )


def scrub(text: str) -> str:
    """``text`` with every secret it contains replaced by ``[redacted]``: the
    known values and, by their shape, bearer tokens and provider keys.  For
    errors and what servers send back about a request."""
    pattern = _pattern(_known_secrets())
    return _scrub(text if pattern is None else pattern.sub(REDACTED, text))


def scrub_values(text: str, *, scenario: bool = True) -> str:
    """``text`` with the known secret values replaced (those of the
    environment, the client's keys and, unless ``scenario`` is False, what
    scenarios mark secret), but not what merely looks like a key: a key-like
    fact a scenario plants is what a probe checks."""
    pattern = _pattern(_known_secrets(scenario=scenario))
    return (
        text
        if pattern is None or len(text) < MIN_SCENARIO_SECRET_CHARS
        else pattern.sub(REDACTED, text)
    )


def scrub_data(value: Any, *, scenario: bool = True) -> Any:
    """Every string in a JSON-like structure (dict keys included) with the
    known secret values replaced, as ``scrub_values``."""
    return _scrub_data(value, _pattern(_known_secrets(scenario=scenario)))


def needs_scrub(
    value: Any, *, scenario: bool = True, encode: Callable[[Any], str] | None = None
) -> bool:
    """False when ``scrub_data(value)`` would equal ``value``; True when it may not.

    One look at ``value`` written as JSON instead of a walk over every string
    in it: a record holds hundreds of strings and, almost always, no secret.
    ``encode``: how to write it (``ensure_ascii=False``), when not ``json.dumps``."""
    secrets = _known_secrets(scenario=scenario)
    if not secrets:
        return False  # nothing to look for (a run with no keys set, the usual mock run)
    try:
        if encode is None:
            text = json.dumps(value, ensure_ascii=False, default=_not_text)
        else:
            text = encode(value)
    except (TypeError, ValueError):  # a key JSON cannot write, or a cycle: walk it
        return True
    return _may_hold_secret(text, secrets)


def scrub_json(value: Any, encode: Callable[[Any], str] | None = None) -> str:
    """``json.dumps(scrub_data(value), sort_keys=True, ensure_ascii=False)``,
    written once and never walked when nothing in it can be a secret.
    ``encode``: what writes ``value`` so, when not ``json.dumps``."""
    secrets = _known_secrets()
    if encode is None:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    else:
        text = encode(value)
    if not _may_hold_secret(text, secrets):
        return text
    return json.dumps(_scrub_data(value, _pattern(secrets)), sort_keys=True, ensure_ascii=False)


def _scrub(text: str) -> str:
    """The shapes of keys and tokens replaced."""
    if len(text) < MIN_SECRET_CHARS:  # too short to hold any key of a known shape
        return text
    for shape in _SHAPES:
        text = shape.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def _scrub_data(value: Any, values: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return values.sub(REDACTED, value) if values is not None else value
    if isinstance(value, dict):
        return {_scrub_data(k, values): _scrub_data(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if values is None or all(type(v) in _NO_TEXT for v in value):  # nothing to scrub
            return type(value)(value)
        return type(value)(_scrub_data(v, values) for v in value)
    return value


# Values that hold no text, so no secret.
_NO_TEXT = (int, float, bool, type(None))


def _not_text(_value: object) -> None:
    return None  # scrub_data leaves any other object as it is: its content cannot matter


def _may_hold_secret(text: str, secrets: frozenset[str]) -> bool:
    """Whether JSON ``text`` (written with ``ensure_ascii=False``) holds a
    known secret.  JSON escapes a string one character at a time and never a
    letter, ``-`` or ``_``: whatever a string holds, its JSON holds in
    escaped form."""
    return any(escaped in text for escaped in _json_escaped(secrets))


def may_hold_shape(text: str) -> bool:
    """Whether ``text`` holds a word some key shape needs, in any case the
    shapes accept."""
    if not text.isascii():
        for lookalike, letter in _LETTER_LOOKALIKES.items():
            if lookalike in text:
                text = text.replace(lookalike, letter)
    lowered = text.lower()
    return any(word in lowered for word in _SHAPE_WORDS) or (
        "key" in lowered and _API_KEY_WORD.search(lowered) is not None
    )


def _known_secrets(*, scenario: bool = True) -> frozenset[str]:
    """The secret values of the environment as it is now, the registered
    keys and (with ``scenario``) what scenarios marked secret."""
    with _explicit_lock:
        explicit = frozenset(_explicit | _scenario) if scenario else frozenset(_explicit)
    return _environment_secrets() | explicit


def _environment_secrets() -> frozenset[str]:
    """The secret values of the environment as it is now.  Read for every
    record, while pytest changes PYTEST_CURRENT_TEST for every test: each
    variable's verdict is cached, not the whole environment's."""
    stored = getattr(os.environ, "_data", None)
    # The mapping os.environ keeps encoded: os.environ.items() would decode
    # every name and value on each call.
    pairs = stored.items() if isinstance(stored, dict) else os.environ.items()
    return _as_set(tuple(value for value in map(_secret_value, pairs) if value is not None))


@lru_cache(maxsize=4096)
def _secret_value(pair: tuple[str | bytes, str | bytes]) -> str | None:
    # Stored encoded on POSIX, as os.environ decodes it; a str is kept as it is.
    name, value = os.fsdecode(pair[0]), os.fsdecode(pair[1])
    if len(value) >= MIN_SECRET_CHARS and is_secret_name(name) and not _is_path(value):
        return value
    return None


@lru_cache(maxsize=8)
def _as_set(values: tuple[str, ...]) -> frozenset[str]:
    return frozenset(values)


@lru_cache(maxsize=8)
def _json_escaped(values: frozenset[str]) -> tuple[str, ...]:
    return tuple(json.dumps(value, ensure_ascii=False)[1:-1] for value in values)


@lru_cache(maxsize=8)
def _pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    # Longest first: a key that contains another is replaced whole.
    return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


def _is_path(value: str) -> bool:
    """A file that holds a secret (GOOGLE_APPLICATION_CREDENTIALS=/path/key.json)
    is not one; scrubbing its path would only garble answers about it."""
    return value.startswith(("/", "~", "./")) or bool(re.match(r"[A-Za-z]:[\\/]", value))
