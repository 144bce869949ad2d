"""Scenario format: schema, loading with line numbers, building sessions."""

from .build import Conversation, Fact, ProbeCase, build_conversation
from .errors import Problem, ScenarioError
from .limits import Limits
from .loader import load_conversations, load_scenarios, parse_conversations
from .schema import Expectation, Scenario

__all__ = [
    "Conversation",
    "Expectation",
    "Fact",
    "Limits",
    "ProbeCase",
    "Problem",
    "Scenario",
    "ScenarioError",
    "build_conversation",
    "load_conversations",
    "load_scenarios",
    "parse_conversations",
]
