"""What both YAML loaders share: the budget of one load and its limits,
the problems of a file as a whole, and ``!include`` confined to the
scenario root (see yamlsource.py for how a file is loaded)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import yaml

from .confine import confinement_problem
from .errors import ScenarioError
from .limits import Limits
from .textfile import FileProblem, read_text_file

_INCLUDE = "!include"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"
_CYCLE = "an alias refers to a list or mapping that contains it"
_EXPANDED = " (aliases and includes expanded)"


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
    # parse_yaml, for a YAML file this one includes; set by it with the rest
    # (the loaders sit below the function that runs them).
    parse_nested: Any

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
                _, data = self.parse_nested(
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
