"""Safe YAML with positions: the node tree (for line numbers), the data, and
``!include`` of other YAML or text files that cannot leave the scenario root.

Loading is bounded (see limits.py): nesting depth, and the values and text a
file amounts to once aliases and includes are expanded, are counted before
anything is constructed, so a "billion laughs" of nested aliases is refused
before anything is expanded.  Timestamps are never constructed: ``2024-01-01``
stays the string it looks like, and ``2001-13-45`` is not an error.

When PyYAML has libyaml, libyaml composes the node tree in C (it refuses
nesting deeper than 1,000 itself) and one pass over that tree counts and
bounds it as the pure-Python loader does while composing.  A file the C path
refuses, for any reason (a limit included), is loaded again by the
pure-Python loader: its error messages are the ones users see, and a file the
C parser alone rejects still loads.  What libyaml alone would accept (a tab
after a colon, a "?" in a flow collection's plain text) takes the pure-Python
path too, so what loads never depends on how PyYAML was built."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.constructor import SafeConstructor
from yaml.reader import Reader
from yaml.resolver import Resolver

from ..textcap import surrogate_problem
from .confine import confinement_problem
from .errors import ScenarioError
from .limits import Limits
from .textfile import FileProblem, read_text_file

Loc = tuple[str | int, ...]

_INCLUDE = "!include"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"
_CYCLE = "an alias refers to a list or mapping that contains it"


class _Budget:
    """What one file and everything it includes have used so far."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.nodes = 0
        self.chars = 0
        self.includes = 0
        # A fragment included many times is found and read once.
        self.paths: dict[tuple[Path, str], Path] = {}
        self.texts: dict[Path, str] = {}

    def spent(self) -> tuple[int, int, int]:
        return self.nodes, self.chars, self.includes

    def refund(self, spent: tuple[int, int, int]) -> None:
        """Back to ``spent`` (what a load abandoned half-way had counted)."""
        self.nodes, self.chars, self.includes = spent


class _WholeFileProblem(Exception):
    """A limit of the file as a whole (its size, depth or includes), or an
    include cycle.  Found inside an included file, it is reported at the
    ``!include`` line of the file being loaded: that is the file pytest and
    ``ctxeval validate`` name, and the one whose includes must change."""

    def __init__(self, message: str, display: str, mark: Any) -> None:
        super().__init__(message)
        self.message, self.display, self.mark = message, display, mark


class _Bounded:
    """What both loaders share: the budget and its limits, ``!include``, and
    construction that reports what it cannot read with a position."""

    # Set by parse_yaml before anything is composed.
    budget: _Budget
    base_dir: Path
    root: Path
    display: str
    chain: tuple[Path, ...]  # the files being loaded, outermost first (for cycles)
    level: int  # 0 for the file being loaded, 1 for a file it includes, ...
    depth_offset: int  # nesting of the ``!include`` that loads this file
    # The data of each ``!include`` node, by id(node), for _include.
    _included: dict[int, Any]
    # From the constructor class this is mixed with.
    construct_scalar: Any

    @property
    def _through(self) -> str:
        return " (counting the files that include this one)" if self.depth_offset else ""

    def _too_deep(self, depth: int, mark: Any) -> NoReturn:
        found = f"lists and mappings nested {depth:,} deep" + self._through
        self._whole_file(mark, self.budget.limits.exceeded("yaml_depth", found))

    def _charge(self, nodes: int, chars: int, mark: Any) -> None:
        """Count values and text against the limits of the whole load."""
        budget = self.budget
        budget.nodes += nodes
        budget.chars += chars
        limits = budget.limits
        if budget.nodes > limits.yaml_nodes:
            found = f"the file expands to more than {limits.yaml_nodes:,} values"
            self._whole_file(mark, limits.exceeded("yaml_nodes", found + _EXPANDED))
        if budget.chars > limits.yaml_chars:
            found = f"the file expands to more than {limits.yaml_chars:,} characters of text"
            self._whole_file(mark, limits.exceeded("yaml_chars", found + _EXPANDED))

    def _fail(self, mark: Any, message: str) -> NoReturn:
        raise ScenarioError.at(self.display, mark.line + 1, mark.column + 1, message)

    def _whole_file(self, mark: Any, message: str) -> NoReturn:
        raise _WholeFileProblem(message, self.display, mark)

    def _read_include(self, node: yaml.ScalarNode, depth: int) -> tuple[int, int]:
        """Load the ``!include`` ``node``, found inside ``depth`` lists and
        mappings of this file, into ``_included``; the values and characters
        it added to the budget (what an alias to it costs, less the node)."""
        mark = node.start_mark
        target = node.value
        if not target:
            self._fail(mark, "!include needs a path")
        budget = self.budget
        limits = budget.limits
        budget.includes += 1
        if budget.includes > limits.includes:
            found = f"the file follows more than {limits.includes:,} !include (counting repeats)"
            self._whole_file(mark, limits.exceeded("includes", found))
        if self.level >= limits.include_depth:
            found = f"!include {target!r} would be nested {self.level + 1:,} includes deep"
            self._whole_file(mark, limits.exceeded("include_depth", found))
        path = budget.paths.get((self.base_dir, target))
        if path is None:
            try:
                path = (self.base_dir / target).resolve()
            except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
                self._fail(mark, f"!include {target!r}: not a usable path ({exc})")
            problem = confinement_problem(self.base_dir / target, path, self.root)
            if problem:
                self._fail(mark, f"!include {target!r} {problem}")
            budget.paths[self.base_dir, target] = path
        if path in self.chain:
            cycle = " -> ".join(p.name for p in (*self.chain[self.chain.index(path) :], path))
            self._whole_file(mark, f"!include {target!r} makes a cycle: {cycle}")
        text = budget.texts.get(path)
        if text is None:
            try:
                text = budget.texts[path] = read_text_file(path, limits)
            except FileProblem as exc:
                self._fail(mark, f"!include {target!r}: {exc}")
        if path.suffix in (".yaml", ".yml"):
            before = (budget.nodes, budget.chars)
            try:
                _, data = parse_yaml(
                    text,
                    str(path),
                    base_dir=path.parent,
                    root=self.root,
                    budget=budget,
                    chain=(*self.chain, path),
                    level=self.level + 1,
                    depth_offset=self.depth_offset + depth,
                )
            except _WholeFileProblem as exc:
                if self.level:
                    raise
                inner = exc.mark
                shown = os.path.relpath(exc.display, self.base_dir)
                where = f"{shown}:{inner.line + 1}:{inner.column + 1}"
                self._fail(mark, f"!include {target!r}, at {where}: {exc.message}")
            # The nested parse counted against the shared budget.
            size = (budget.nodes - before[0], budget.chars - before[1])
        else:
            data = text
            self._charge(0, len(text), mark)
            size = (0, len(text))
        self._included[id(node)] = data
        return size

    # -- construction --------------------------------------------------------------------

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)  # type: ignore[misc]
        except yaml.YAMLError:
            raise
        except Exception as exc:  # noqa: BLE001
            # e.g. ``!!int abc``, ``!!bool maybe`` or an empty ``!!float``:
            # PyYAML's constructors raise these without a position.
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            why = "not a value it has" if isinstance(exc, KeyError) else str(exc)
            value = node.value if isinstance(node.value, str) else ""
            shown = repr(value if len(value) <= 60 else value[:59] + "\u2026")
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {shown} as {tag} ({why})", node.start_mark
            ) from None


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


def parse_yaml(
    text: str,
    display: str,
    *,
    base_dir: Path,
    root: Path,
    limits: Limits | None = None,
    budget: _Budget | None = None,
    chain: tuple[Path, ...] = (),
    level: int = 0,
    depth_offset: int = 0,
) -> tuple[yaml.Node, Any]:
    """The node tree and the data of one YAML document, or ScenarioError.
    ``chain`` holds the file itself when it is read from one (for include
    cycles); ``budget`` is shared with the files it includes."""
    budget = budget or _Budget(limits or Limits.from_env())
    context = (display, base_dir, root, budget, chain, level, depth_offset)
    if use_c_parser and CParser is not None and _c_parser_reads_alike(text):
        spent = budget.spent()
        try:
            return _load(_CLoader, text, *context)
        except Exception:  # noqa: BLE001 - the pure-Python loader says what is wrong
            budget.refund(spent)
    try:
        return _load(_Loader, text, *context)
    except _WholeFileProblem as exc:
        if level:
            raise  # reported at the include line of the file being loaded
        where = exc.mark
        raise ScenarioError.at(display, where.line + 1, where.column + 1, exc.message) from None
    except yaml.reader.ReaderError as exc:
        line, col = _line_column(text, exc.position)
        raise ScenarioError.at(display, line, col, _unprintable(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ScenarioError.at(display, line, col, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError.at(display, 1, 1, f"invalid YAML: {exc}") from None
    except RecursionError:
        # Not expected within the depth limit; never a traceback all the same.
        raise ScenarioError.at(display, 1, 1, "invalid YAML: nested too deeply to read") from None


# Whether parse_yaml tries libyaml's parser first (tests compare the two paths).
use_c_parser = True


def _c_parser_reads_alike(text: str) -> bool:
    """Whether libyaml reads ``text`` as the pure-Python parser does.  It is
    laxer with tabs ("a:<TAB>b" loads) and with some characters the Python
    reader refuses; such files take the Python path, so that what loads and
    what is refused does not depend on how PyYAML was built."""
    return "\t" not in text and not Reader.NON_PRINTABLE.search(text)


def _load(
    loader_class: Any,
    text: str,
    display: str,
    base_dir: Path,
    root: Path,
    budget: _Budget,
    chain: tuple[Path, ...],
    level: int,
    depth_offset: int,
) -> tuple[yaml.Node, Any]:
    """One attempt at the document with one loader class; its errors raw."""
    loader: Any = None
    try:
        loader = loader_class(text)
        loader.budget, loader.base_dir, loader.root, loader.display = (
            budget,
            base_dir,
            root.resolve(),
            display,
        )
        loader.chain, loader.level, loader.depth_offset = chain, level, depth_offset
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError.at(display, 1, 1, "empty file: expected a scenario mapping")
        _reject_duplicate_keys(node, display)
        _reject_surrogates(node, display)
        data = loader.construct_document(node)
    finally:
        if loader is not None:
            loader.dispose()
    return node, data


def _unprintable(exc: yaml.reader.ReaderError) -> str:
    character = exc.character
    code = ord(character) if isinstance(character, str) else int(character)
    name = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL"}.get(code, "control character")
    return (
        f"invalid YAML: character U+{code:04X} ({name}) is not allowed in a YAML file; "
        f'remove it, or write it as "\\x{code:02x}" inside a double-quoted string'
        if code < 0x100
        else f"invalid YAML: character U+{code:04X} is not allowed in a YAML file; remove it"
    )


def _line_column(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


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
