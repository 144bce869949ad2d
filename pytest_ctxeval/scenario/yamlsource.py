"""Safe YAML with positions: the node tree (for line numbers), the data, and
``!include`` of other YAML or text files that cannot leave the scenario root.

Loading is bounded (see limits.py): nesting depth, and the values and text a
file amounts to once aliases and includes are expanded, are counted while the
node tree is composed, so a "billion laughs" of nested aliases is refused
before anything is expanded.  Timestamps are never constructed: ``2024-01-01``
stays the string it looks like, and ``2001-13-45`` is not an error.

libyaml's C parser turns the text into events (most of the time a load
takes); composing the node tree from them stays in Python, so every bound
above applies to both parsers alike.  A file the C path refuses, for any
reason, is loaded again by the pure-Python loader: its error messages are the
ones users see, and a file the C parser alone rejects still loads.  What
libyaml alone would accept (a tab after a colon, a "?" in a flow collection's
plain text) takes the pure-Python path too, so what loads never depends on
how PyYAML was built."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.reader import Reader
from yaml.resolver import Resolver

from .errors import ScenarioError
from .limits import Limits
from .textfile import FileProblem, read_text_file

Loc = tuple[str | int, ...]

_INCLUDE = "!include"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"


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
    """Bounded composition and ``!include``, over whichever parser gives the
    events; construction that reports what it cannot read with a position."""

    # Set by parse_yaml before anything is composed.
    budget: _Budget
    base_dir: Path
    root: Path
    display: str
    chain: tuple[Path, ...]  # the files being loaded, outermost first (for cycles)
    level: int  # 0 for the file being loaded, 1 for a file it includes, ...
    depth_offset: int  # nesting of the ``!include`` that loads this file
    # From the parser and composer classes this is mixed with.
    check_event: Any
    peek_event: Any
    construct_scalar: Any

    def _start_counting(self) -> None:
        # (values, characters) once expanded, per open collection ...
        self._open: list[list[int]] = []
        # ... and per anchored node (what an alias to it costs).
        self._sizes: dict[int, tuple[int, int]] = {}
        self._included: dict[int, Any] = {}

    # -- composition: count, bound, and load includes ------------------------------------

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = self._compose(parent, index)
            if id(node) not in self._sizes:
                # Anchors are registered before their children are composed.
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to a list or mapping that contains it", mark
                )
            self._spend(*self._sizes[id(node)], mark)
            return node
        event = self.peek_event()
        mark = event.start_mark
        if isinstance(event, yaml.ScalarEvent):
            node = self._compose(parent, index)
            size = (1, len(event.value))
            self._spend(*size, mark)
            if event.tag == _INCLUDE and isinstance(node, yaml.ScalarNode):
                size = self._compose_include(node)
        else:
            depth = self.depth_offset + len(self._open) + 1
            limits = self.budget.limits
            if depth > limits.yaml_depth:
                found = f"lists and mappings nested {depth:,} deep" + self._through
                self._whole_file(mark, limits.exceeded("yaml_depth", found))
            self._open.append([0, 0])
            self._spend(1, 0, mark)
            node = self._compose(parent, index)
            nodes, chars = self._open.pop()
            size = (nodes + 1, chars)
        if event.anchor is not None:
            self._sizes[id(node)] = size
        return node

    @property
    def _through(self) -> str:
        return " (counting the files that include this one)" if self.depth_offset else ""

    def _compose(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        node: yaml.Node | None = super().compose_node(parent, index)  # type: ignore[misc]
        assert node is not None  # an event is pending, so a node comes of it
        return node

    def _spend(self, nodes: int, chars: int, mark: Any) -> None:
        """Count a value (or what an alias expands to) against the limits."""
        if self._open:
            self._open[-1][0] += nodes
            self._open[-1][1] += chars
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

    def _compose_include(self, node: yaml.ScalarNode) -> tuple[int, int]:
        """Load an ``!include`` now, so that its size counts where it is used
        (an alias to it costs the whole included file).  Returns that size."""
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
                path = budget.paths[self.base_dir, target] = (self.base_dir / target).resolve()
            except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
                self._fail(mark, f"!include {target!r}: not a usable path ({exc})")
        if not path.is_relative_to(self.root):
            self._fail(mark, f"!include {target!r} leaves the scenario root {self.root}")
        if path in self.chain:
            cycle = " -> ".join(p.name for p in (*self.chain[self.chain.index(path) :], path))
            self._whole_file(mark, f"!include {target!r} makes a cycle: {cycle}")
        text = budget.texts.get(path)
        if text is None:
            try:
                text = budget.texts[path] = read_text_file(path, limits)
            except FileProblem as exc:
                self._fail(mark, f"!include {target!r}: {exc}")
        before = (budget.nodes, budget.chars)
        if path.suffix in (".yaml", ".yml"):
            try:
                _, data = parse_yaml(
                    text,
                    str(path),
                    base_dir=path.parent,
                    root=self.root,
                    budget=budget,
                    chain=(*self.chain, path),
                    level=self.level + 1,
                    depth_offset=self.depth_offset + len(self._open),
                )
            except _WholeFileProblem as exc:
                if self.level:
                    raise
                inner = exc.mark
                shown = os.path.relpath(exc.display, self.base_dir)
                where = f"{shown}:{inner.line + 1}:{inner.column + 1}"
                self._fail(mark, f"!include {target!r}, at {where}: {exc.message}")
            # The nested parse counted against the budget, not our sizes.
            nodes, chars = budget.nodes - before[0], budget.chars - before[1]
            if self._open:
                self._open[-1][0] += nodes
                self._open[-1][1] += chars
        else:
            data = text
            self._spend(0, len(text), mark)
            nodes, chars = 0, len(text)
        self._included[id(node)] = data
        return (nodes + 1, chars)

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
    """The pure-Python loader: SafeLoader without timestamps, bounded."""

    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)  # checks for characters YAML does not allow
        self._start_counting()

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

    class _CLoader(_Bounded, Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """libyaml's events, composed and constructed as ``_Loader`` does.
        Composer comes before CParser so that composition runs the bounded
        Python composer, not libyaml's own."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start_counting()
            self._flow_depth = 0

        def dispose(self) -> None:
            pass

        # libyaml reads "[a?, b]" and "{q: why?}" as plain text that PyYAML
        # refuses (in a flow collection a "?" ends its plain scalar): such a
        # file takes the pure-Python path, which refuses it as it always did.

        def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
            event = self.peek_event()
            if self._flow_depth and not event.style and "?" in event.value:  # plain
                raise _ReadDifferently(event.start_mark)
            return super().compose_scalar_node(anchor)

        def compose_sequence_node(self, anchor: Any) -> yaml.SequenceNode:
            return self._in_flow(super().compose_sequence_node, anchor)  # type: ignore[no-any-return]

        def compose_mapping_node(self, anchor: Any) -> yaml.MappingNode:
            return self._in_flow(super().compose_mapping_node, anchor)  # type: ignore[no-any-return]

        def _in_flow(self, compose: Any, anchor: Any) -> Any:
            flow = bool(self.peek_event().flow_style)
            self._flow_depth += flow
            try:
                return compose(anchor)
            finally:
                self._flow_depth -= flow


class _ReadDifferently(Exception):
    """Text libyaml would read where the pure-Python parser does not."""


_EXPANDED = " (aliases and includes expanded)"


def _include(loader: _Loader, node: yaml.Node) -> Any:
    if id(node) in loader._included:
        return loader._included[id(node)]
    # Only a scalar is loaded while composing; this says what else was found.
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
