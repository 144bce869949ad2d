"""Checks and look-ups on a composed YAML node tree: repeated keys, lone
surrogates, and the node (and its line) at a location in the data."""

from __future__ import annotations

from typing import Any

import yaml

from ..textcap import surrogate_problem
from .errors import ScenarioError

Loc = tuple[str | int, ...]


def _reject_duplicate_keys(root: yaml.Node, path: str) -> None:
    """The first repeated key in the file, if any.  Iterative (nesting is
    bounded, but the stack need not be), and each node once: an alias is
    checked where its anchor is."""
    seen_nodes: set[int] = set()
    repeated: list[yaml.Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[Any] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        repeated.append(key)
                    keys.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    if repeated:
        first = min(repeated, key=lambda k: (k.start_mark.line, k.start_mark.column))
        mark = first.start_mark
        raise ScenarioError.at(
            path, mark.line + 1, mark.column + 1, f"duplicate key {first.value!r}"
        )


def _reject_surrogates(root: yaml.Node, path: str) -> None:
    """A ``"\\ud800"`` escape makes a lone surrogate: not a character, and
    no results file, cassette or report could hold it."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            problem = surrogate_problem(node.value)
            if problem:
                mark = node.start_mark
                raise ScenarioError.at(
                    path,
                    mark.line + 1,
                    mark.column + 1,
                    f"{problem} of this text is not valid Unicode (an escape such as "
                    '"\\ud800" on its own); remove it, or escape a whole character',
                )
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += (key, value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def find_node(root: yaml.Node, loc: Loc) -> tuple[yaml.Node, yaml.Node | None]:
    """The deepest node along ``loc``, and the key node of its last step."""
    node, key_node = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(
                (
                    (k, v)
                    for k, v in node.value
                    if isinstance(k, yaml.ScalarNode) and k.value == part
                ),
                None,
            )
            if match is None:
                return node, None
            key_node, node = match
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node, key_node = node.value[part], None
        else:
            break
    return node, key_node


def position(root: yaml.Node, loc: Loc) -> tuple[int, int]:
    node, _ = find_node(root, loc)
    return node.start_mark.line + 1, node.start_mark.column + 1
