"""The agent-recall scenario the strategy and adapter tests share: a launch
code early, a large tool output, small talk, then (optionally) a late fact."""

from __future__ import annotations

_AGENT_CHAT = """\
id: {id}
system: You are an assistant with access to the deployment database.
turns:
  - user: "Before we start: the launch code is ZEBRA-42."
  - assistant: Noted, I will remember it.
  - user: Dump the deployment records for the checkout service.
  - tool:
      name: query_deployments
      args: {{service: checkout}}
      generate: {{kind: json_rows, rows: 40, seed: 3}}
  - assistant: That is 40 records; most deployments succeeded.
  - generate: {{kind: chitchat, turns: 10, seed: 1}}
"""
_CAT_TURNS = """\
  - user: "My cat is called Miso."
  - assistant: "Miso is a lovely name for a cat."
"""
_LAUNCH_PROBE = (
    '  - {id: launch-code, user: "What is the launch code?", expect: {contains: "ZEBRA-42"}}\n'
)
_CAT_PROBE = '  - {id: cat, user: "What is my cat called?", expect: {contains: "Miso"}}\n'


def agent_recall_scenario(scenario_id: str = "agent-recall", *, with_cat: bool = True) -> str:
    """Scenario YAML: the launch code to recall past a 40-row tool output and
    small talk; ``with_cat`` adds a late fact and a second probe for it."""
    turns = _AGENT_CHAT.format(id=scenario_id) + (_CAT_TURNS if with_cat else "")
    return turns + "probes:\n" + _LAUNCH_PROBE + (_CAT_PROBE if with_cat else "")
