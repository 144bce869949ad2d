"""Scenarios written inline in tests: parse them, or get the one error they give."""

from __future__ import annotations

import textwrap

import pytest

from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.errors import ScenarioError
from pytest_ctxeval.scenario.loader import parse_conversations

PATH = "scenarios/s.yaml"


def parse_inline(text: str, path: str = PATH, *, default_probes: str = "") -> list[Conversation]:
    """Dedented YAML; ``default_probes`` is appended when the text has no probes."""
    text = textwrap.dedent(text).lstrip("\n")
    if default_probes and "probes:" not in text:
        text += default_probes
    return parse_conversations(text, path)


def only_error(text: str, path: str = PATH, *, default_probes: str = "") -> str:
    """The one problem a broken scenario gives, as printed."""
    with pytest.raises(ScenarioError) as info:
        parse_inline(text, path, default_probes=default_probes)
    problems = info.value.problems
    assert len(problems) == 1, [str(p) for p in problems]
    return str(problems[0])
