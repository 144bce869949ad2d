"""How much a scenario file may ask the loader to do.

Every limit is far above what a real scenario needs (a 1,000-turn generated
coding session is about 600,000 tokens; an imported LoCoMo conversation is
about 1 MB of YAML), and low enough that a hostile or broken file is refused
in well under a second instead of exhausting memory or time.  Each one can be
raised with an environment variable ``CTXEVAL_MAX_<NAME>`` (e.g.
``CTXEVAL_MAX_MATRIX=5000``), which pytest and ``ctxeval validate`` both read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

ENV_PREFIX = "CTXEVAL_MAX_"


@dataclass(frozen=True)
class Limits:
    # Bytes in a scenario file, or in one file it includes.
    file_bytes: int = 10_000_000
    # Nesting of mappings and lists, counted through includes.
    yaml_depth: int = 100
    # Values (scalars, lists, mappings) in one file once aliases and includes
    # are expanded: what refuses a "billion laughs" of nested aliases.
    yaml_nodes: int = 1_000_000
    # Characters of text in one file once aliases and includes are expanded.
    yaml_chars: int = 40_000_000
    # ``!include`` directives followed while loading one file, at every level.
    includes: int = 1_000
    # Includes inside includes.
    include_depth: int = 8
    # Scenarios the ``matrix:`` grids of one file expand to, all together.
    matrix: int = 1_000
    # Tokens of ``generate:`` text in one file, estimated before generating.
    generated_tokens: int = 4_000_000
    # Characters one template may produce, intermediate results included.
    template_chars: int = 1_000_000
    # Loop iterations and calls one template may run.
    template_steps: int = 100_000
    # Seconds spent rendering all templates of one file: a backstop for work
    # that the other template limits do not count.
    template_seconds: int = 10
    # Seconds of ``regex`` / ``not_regex`` searching for the scenarios of one
    # file, and for a whole run (each search also stops at 2 s).
    regex_seconds: int = 10
    regex_run_seconds: int = 60

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, with any ``CTXEVAL_MAX_<NAME>`` the environment sets."""
        environ = os.environ if environ is None else environ
        changed: dict[str, int] = {}
        for field in fields(cls):
            raw = environ.get(env_name(field.name))
            if raw is None or not raw.strip():
                continue
            try:
                value = int(raw.strip().replace(",", ""))
            except ValueError:
                value = 0
            if value < 1:
                raise InvalidLimit(
                    f"environment variable {env_name(field.name)}={raw!r}: "
                    "expected a whole number >= 1"
                )
            changed[field.name] = value
        return replace(cls(), **changed) if changed else _DEFAULTS

    def exceeded(self, name: str, found: str) -> str:
        """``found`` plus the limit and how to raise it, e.g. "matrix expands
        to 1,000,000 scenarios; the limit is 1,000 (set CTXEVAL_MAX_MATRIX to
        raise it)"."""
        limit: int = getattr(self, name)
        return f"{found}; the limit is {limit:,} (set {env_name(name)} to raise it)"


class InvalidLimit(ValueError):
    """A ``CTXEVAL_MAX_*`` variable that is not a whole number >= 1."""


class LimitExceeded(ValueError):
    """A limit was hit; the message says which, the value found, and how to raise it."""


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


_DEFAULTS = Limits()
