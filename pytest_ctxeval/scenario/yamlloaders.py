"""The two YAML loaders: the pure-Python one, bounded while it composes,
and libyaml's, bounded in one pass over the tree it composed in C; both
without timestamps and with ``!include`` and bounded integers."""

from __future__ import annotations

import sys
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from .yamlbounds import _CYCLE, _INCLUDE, _INT, _TIMESTAMP, _Bounded


class _Loader(_Bounded, yaml.SafeLoader):
    """The pure-Python loader: SafeLoader without timestamps, bounded while
    it composes."""

    peek_event: Any  # untyped in PyYAML's stubs

    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)  # checks for characters YAML does not allow
        # (values, characters) once expanded, per open collection ...
        self._open: list[list[int]] = []
        # ... and per anchored node (what an alias to it costs).
        self._sizes: dict[int, tuple[int, int]] = {}
        self._included = {}

    # -- composition: count, bound, and load includes ------------------------------------

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = self._compose(parent, index)
            if id(node) not in self._sizes:
                # Anchors are registered before their children are composed.
                raise yaml.composer.ComposerError(None, None, _CYCLE, mark)
            self._spend(*self._sizes[id(node)], mark)
            return node
        event = self.peek_event()
        mark = event.start_mark
        if isinstance(event, yaml.ScalarEvent):
            node = self._compose(parent, index)
            size = (1, len(event.value))
            self._spend(*size, mark)
            if event.tag == _INCLUDE and isinstance(node, yaml.ScalarNode):
                nodes, chars = self._read_include(node, len(self._open))
                if self._open:
                    self._open[-1][0] += nodes
                    self._open[-1][1] += chars
                size = (nodes + 1, chars)
        else:
            depth = self.depth_offset + len(self._open) + 1
            if depth > self.budget.limits.yaml_depth:
                self._too_deep(depth, mark)
            self._open.append([0, 0])
            self._spend(1, 0, mark)
            node = self._compose(parent, index)
            nodes, chars = self._open.pop()
            size = (nodes + 1, chars)
        if event.anchor is not None:
            self._sizes[id(node)] = size
        return node

    def _compose(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        node: yaml.Node | None = super().compose_node(parent, index)
        assert node is not None  # an event is pending, so a node comes of it
        return node

    def _spend(self, nodes: int, chars: int, mark: Any) -> None:
        """Count a value (or what an alias expands to) against the limits."""
        if self._open:
            self._open[-1][0] += nodes
            self._open[-1][1] += chars
        self._charge(nodes, chars, mark)

    # -- scanning: refuse deep flow nesting early ----------------------------------------

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803
        # The scanner looks ahead past every "[" or "{" (each may start a
        # key) at a cost that grows with the nesting: thousands of "[" would
        # take seconds before the composer saw the first of them.
        depth = self.depth_offset + self.flow_level + 1
        limits = self.budget.limits
        if depth > limits.yaml_depth:
            found = f"lists and mappings nested more than {limits.yaml_depth:,} deep"
            self._whole_file(self.get_mark(), limits.exceeded("yaml_depth", found + self._through))
        super().fetch_flow_collection_start(TokenClass)


CParser: Any
try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: the pure-Python loader alone
    CParser = None


if CParser is not None:

    class _CLoader(_Bounded, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml composes the node tree in C; one pass over it then counts
        and bounds it as ``_Loader`` does, before anything is constructed."""

        _room: int  # values libyaml may still compose

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._included = {}

        def get_single_node(self) -> yaml.Node | None:
            self._room = self.budget.limits.yaml_nodes - self.budget.nodes
            node: yaml.Node | None = CParser.get_single_node(self)
            if node is not None:
                self._bound(node)
            return node

        # libyaml's composer calls these for every node it makes (there are
        # no path resolvers to follow).  Each node counts at least once, so a
        # file with more nodes than the limit leaves is given up on at once,
        # not after millions more are made.

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            self._room -= 1
            if self._room < 0:
                raise _TooManyValues

        def ascend_resolver(self) -> None:
            pass

        def _bound(self, root: yaml.Node) -> None:
            """Count ``root``'s tree in document order, as ``_Loader`` counts
            while composing, and load its includes.  Iterative, and each
            node is visited once: an alias is the same node object again, and
            costs what the node counted the first time.  Any problem is raised
            without care for its message: parse_yaml then loads the file with
            ``_Loader``, which says what is wrong and where."""
            budget = self.budget
            limits = budget.limits
            deepest = limits.yaml_depth - self.depth_offset
            nodes, chars = budget.nodes, budget.chars
            # What each list or mapping counted; None while it is open (an
            # alias to it then makes a cycle).
            sizes: dict[int, tuple[int, int] | None] = {}
            # What each included file counted (an alias to it costs it again).
            included: dict[int, tuple[int, int]] = {}
            # Plain scalars with a "?": only where one is first seen may it
            # be refused (a later sight is an alias, and PyYAML reads those).
            asked: set[int] = set()
            # (node, lists and mappings around it, whether inside a flow
            # collection); _DONE once the items of the last list or mapping
            # in ``opened`` (its id and the counts before it) are counted.
            stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
            opened: list[tuple[int, int, int]] = []
            pop, push = stack.pop, stack.append
            while stack:
                node, depth, flow = pop()
                if node is _DONE:
                    key, nodes_before, chars_before = opened.pop()
                    # One value more than it holds, itself included: what an
                    # alias to it costs in _Loader, which counts itself twice.
                    sizes[key] = (nodes - nodes_before + 1, chars - chars_before)
                elif node.__class__ is yaml.ScalarNode:
                    value = node.value
                    if not node.style and "?" in value:
                        # libyaml reads "[a?, b]" and "{q: why?}" as plain
                        # text that PyYAML refuses (in a flow collection a
                        # "?" ends its plain scalar).
                        if id(node) not in asked:
                            if flow:
                                raise _ReadDifferently(node.start_mark)
                            asked.add(id(node))
                    if node.tag != _INCLUDE:
                        nodes += 1
                        chars += len(value)
                    elif id(node) in included:
                        again = included[id(node)]
                        nodes += again[0]
                        chars += again[1]
                    else:
                        # The nested load sees the budget as _Loader leaves it.
                        budget.nodes, budget.chars = nodes, chars
                        self._charge(1, len(value), node.start_mark)
                        included_nodes, included_chars = self._read_include(node, depth)
                        included[id(node)] = (included_nodes + 1, included_chars)
                        nodes, chars = budget.nodes, budget.chars
                else:
                    key = id(node)
                    if key in sizes:
                        size = sizes[key]
                        if size is None:
                            raise yaml.composer.ComposerError(None, None, _CYCLE, node.start_mark)
                        nodes += size[0]
                        chars += size[1]
                        continue
                    if depth >= deepest:
                        self._too_deep(self.depth_offset + depth + 1, node.start_mark)
                    sizes[key] = None
                    opened.append((key, nodes, chars))
                    push((_DONE, 0, False))
                    nodes += 1
                    depth += 1
                    flow = bool(node.flow_style)
                    if node.__class__ is yaml.MappingNode:
                        for item_key, item_value in reversed(node.value):
                            push((item_value, depth, flow))
                            push((item_key, depth, flow))
                    else:
                        for item in reversed(node.value):
                            push((item, depth, flow))
            budget.nodes, budget.chars = nodes, chars
            self._charge(0, 0, root.start_mark)


class _ReadDifferently(Exception):
    """Text libyaml would read where the pure-Python parser does not."""


class _TooManyValues(Exception):
    """More values than the limit leaves, found while libyaml composes."""


# Marks, in _CLoader._bound, the end of a list or mapping.
_DONE = object()


_EXPANDED = " (aliases and includes expanded)"


def _include(loader: _Loader, node: yaml.Node) -> Any:
    if id(node) in loader._included:
        return loader._included[id(node)]
    # Only a scalar is loaded as a file; this says what else was found.
    return loader.construct_scalar(node)


def _bounded_int(loader: _Loader, node: yaml.Node) -> Any:
    digits = sum(c.isalnum() for c in str(node.value))
    most = sys.get_int_max_str_digits() or 4300
    if digits > most:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"an integer of {digits:,} digits; numbers may have at most {most:,} digits "
            "(put it in quotes if it is text)",
            node.start_mark,
        )
    return yaml.SafeLoader.construct_yaml_int(loader, node)  # type: ignore[arg-type]


def _timestamp_as_text(loader: _Loader, node: yaml.Node) -> Any:
    return loader.construct_scalar(node)


_LOADERS: list[Any] = [_Loader] if CParser is None else [_Loader, _CLoader]
for _loader_class in _LOADERS:
    _loader_class.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _loader_class.add_constructor(_INCLUDE, _include)
    _loader_class.add_constructor(_INT, _bounded_int)
    _loader_class.add_constructor(_TIMESTAMP, _timestamp_as_text)
