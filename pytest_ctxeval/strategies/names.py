"""Strategy names as written on the command line, and the names results use.

``--ctx-strategy`` takes a comma list; a name may carry parameters,
``headtail(head=50,tail=50)``, so the list is split on commas outside
parentheses, brackets, braces and quotes.  A value is read as YAML, as in a
preset's ``params``: ``50`` is a number, ``tokens`` a string, ``true`` a flag.

Items and results show parameters as ``headtail[head:50+tail:50]``: pytest's
``-k`` cannot match parentheses, ``=`` or commas, but matches this form, and
the form is accepted back on the command line.

A pipeline joins strategies with ``+`` outside brackets,
``toolprune+compaction-cached(keep_turns=6)``, shown as
``toolprune+compaction-cached[keep_turns:6]``: ``-k`` reads ``+`` as part of a
word, so the item ids and ``-k`` carry it too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .registration import UnknownStrategyError

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_QUOTES = ("'", '"')
# Characters of a value shown bare in a display name: -k reads them as one word.
_PLAIN_VALUE = re.compile(r"^[\w./-]+$")


@dataclass(frozen=True)
class WrittenName:
    """One entry of the list: the strategy's name and the parameters given with it."""

    base: str
    params: dict[str, Any] = field(default_factory=dict)
    # Each parameter's text as written, for a string parameter given ``1`` or ``no``.
    texts: dict[str, str] = field(default_factory=dict)
    written: str = ""


def split_names(text: str) -> list[str]:
    """``"headtail(head=50,tail=50), sliding"`` -> ``["headtail(head=50,tail=50)", "sliding"]``."""
    return [part.strip() for part in _split_outside_brackets(text, ",", text) if part.strip()]


def split_stages(text: str) -> list[str]:
    """``"toolprune+compaction-cached[keep_turns:6]"`` -> its pipeline stages.

    ``+`` outside brackets joins stages; inside ``[...]`` it separates parameters.
    One name alone is a list of one."""
    parts = [part.strip() for part in _split_outside_brackets(text, "+", text)]
    if len(parts) > 1 and not all(parts):
        raise UnknownStrategyError(
            f"{text!r}: a pipeline needs a strategy on each side of '+', "
            "as in toolprune+compaction-cached"
        )
    return parts


def parse_name(written: str) -> WrittenName:
    """Split ``name(key=value,...)`` or ``name[key:value+...]`` into name and parameters."""
    text = written.strip()
    # A strategy name (even module:Class) has no brackets: the first one opens
    # the parameters.
    start = next((i for i, c in enumerate(text) if c in "(["), None)
    if start is None:
        if any(c in text for c in ")]"):
            raise UnknownStrategyError(f"{written!r}: unbalanced parentheses or brackets")
        return WrittenName(text, written=text)
    opener = text[start]
    separator, assign = (",", "=") if opener == "(" else ("+", ":")
    _split_outside_brackets(text, ",", written)  # balanced, or a clear error
    if not text.endswith(_OPENERS[opener]):
        raise UnknownStrategyError(
            f"{written!r}: parameters go last, as in headtail(head=50,tail=50)"
        )
    base = text[:start].strip()
    if not base:
        raise UnknownStrategyError(f"{written!r}: no strategy name before {opener!r}")
    params, texts = _parse_params(text[start + 1 : -1], separator, assign, written)
    return WrittenName(base, params, texts, written=text)


def display_name(base: str, params: dict[str, Any]) -> str:
    """The name items and results use: ``headtail[head:50+tail:50]``, or ``base``
    alone without parameters."""
    if not params:
        return base
    return base + "[" + "+".join(f"{k}:{_show_value(v)}" for k, v in params.items()) + "]"


def _parse_params(
    body: str, separator: str, assign: str, written: str
) -> tuple[dict[str, Any], dict[str, str]]:
    import yaml

    params: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for item in _split_outside_brackets(body, separator, written):
        item = item.strip()
        if not item:
            continue
        key, found, value_text = item.partition(assign)
        key, value_text = key.strip(), value_text.strip()
        if not found or not key.isidentifier():
            raise UnknownStrategyError(
                f"{written!r}: expected name{assign}value, got {item!r}"
                f" (as in headtail(head=50,tail=50))"
            )
        if not value_text:
            raise UnknownStrategyError(f"{written!r}: no value for {key!r}")
        if key in params:
            raise UnknownStrategyError(f"{written!r}: {key!r} is given twice")
        try:
            params[key] = yaml.safe_load(value_text)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or "not a YAML value"
            raise UnknownStrategyError(
                f"{written!r}: cannot read the value of {key!r} ({value_text!r}): {problem}"
            ) from None
        texts[key] = value_text
    return params, texts


def _split_outside_brackets(text: str, separator: str, written: str) -> list[str]:
    parts: list[str] = []
    closers: list[str] = []
    quote: str | None = None
    start = 0
    for index, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in _QUOTES:
            quote = char
        elif char in _OPENERS:
            closers.append(_OPENERS[char])
        elif char in _OPENERS.values():
            if not closers or closers.pop() != char:
                raise UnknownStrategyError(f"{written!r}: unbalanced {char!r}")
        elif char == separator and not closers:
            parts.append(text[start:index])
            start = index + 1
    if quote:
        raise UnknownStrategyError(f"{written!r}: unclosed quote {quote}")
    if closers:
        raise UnknownStrategyError(f"{written!r}: {closers[-1]!r} is missing")
    parts.append(text[start:])
    return parts


def _show_value(value: Any) -> str:
    """A value as YAML reads it back: bare when it is a plain word or number."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str) and _PLAIN_VALUE.match(value) and _reads_back(value):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _reads_back(text: str) -> bool:
    import yaml

    try:
        return bool(yaml.safe_load(text) == text)
    except yaml.YAMLError:
        return False
