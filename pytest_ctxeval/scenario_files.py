"""Which YAML files a run collects as scenarios.

A project that sets ``ctx_scenario_dirs`` in its ini has said where its
scenarios are: every YAML file there is one, and a broken file is an error.
Without that setting the plugin looks in ``scenarios/`` but must stay out of
the way of projects that keep other YAML there, so it takes only files that
look like scenario files (see :func:`looks_like_scenario_file`).  A file named
on the command line is always a scenario; in a folder named on the command
line (``pytest imported/``) the files that look like scenario files are.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

SCENARIO_SUFFIXES = (".yaml", ".yml")

# Every scenario has probes (the schema requires at least one).
_PROBES = "probes"
# A block key ``probes:``, for a file that is not valid YAML: it is still
# meant as a scenario, and its author wants to see the error.
_PROBES_KEY_LINE = re.compile(r"^[ \t-]*probes[ \t]*:", re.M)
_INCLUDE_TAG = "!include"


class ScenarioFileRule:
    """Decides, per path, whether a YAML file is a scenario file."""

    def __init__(
        self,
        *,
        dirs: tuple[Path, ...],
        dirs_declared: bool,
        named_files: frozenset[Path],
        named_dirs: tuple[Path, ...] = (),
    ) -> None:
        self.dirs = dirs
        # True when the ini names the scenario directories (ctx_scenario_dirs).
        self.dirs_declared = dirs_declared
        self.named_files = named_files
        # Folders the user named on the command line (not pytest's defaults).
        self.named_dirs = named_dirs
        self._sniffed: dict[Path, bool] = {}

    def collects(self, path: Path) -> bool:
        claim = self.claims(path)
        if claim is not None:
            return claim
        if path not in self._sniffed:
            self._sniffed[path] = looks_like_scenario_file(path)
        return self._sniffed[path]

    def claims(self, path: Path) -> bool | None:
        """Whether ``path`` is a scenario file by where it is: True or False,
        or None when that depends on whether it looks like one."""
        if path.suffix not in SCENARIO_SUFFIXES:
            return False
        inside = in_scenario_dirs(path, self.dirs)
        if inside and self.dirs_declared:
            return True
        if path.resolve() in self.named_files:
            return True
        if not (inside or in_scenario_dirs(path.resolve(), self.named_dirs)):
            return False
        return None


def in_scenario_dirs(path: Path, dirs: tuple[Path, ...]) -> bool:
    """Inside a scenario directory, and not in a part whose name starts with
    ``_`` (the place for ``!include`` fragments)."""
    for d in dirs:
        if path.is_relative_to(d):
            return not any(part.startswith("_") for part in path.relative_to(d).parts)
    return False


def named_files(args: list[str], base: Path) -> frozenset[Path]:
    """The files named by command-line arguments (``path::id`` selects in one)."""
    return frozenset((base / arg.split("::")[0]).resolve() for arg in args)


def named_dirs(args: list[str], base: Path) -> tuple[Path, ...]:
    """The folders named by command-line arguments."""
    paths = ((base / arg.split("::")[0]).resolve() for arg in args)
    return tuple(path for path in paths if path.is_dir())


def looks_like_scenario_file(path: Path) -> bool:
    """The file's top level is a scenario (a mapping with ``probes``), a
    ``scenarios:`` list of them, or a list of them; an entry may also be an
    ``!include``.  Only the first document's node tree is built (no values),
    so this is cheap; unreadable files are not scenarios."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    import yaml

    try:
        root = next(yaml.compose_all(text, Loader=_untagged_loader()), None)
    except yaml.YAMLError:
        return _PROBES_KEY_LINE.search(text) is not None
    return root is not None and is_scenario_root(root)


def is_scenario_root(root: yaml.Node) -> bool:
    """Whether a YAML document's node tree is that of a scenario file (see
    looks_like_scenario_file)."""
    import yaml

    if isinstance(root, yaml.MappingNode):
        if _has_key(root, _PROBES):
            return True
        listed = _value(root, "scenarios")
        return isinstance(listed, yaml.SequenceNode) and _lists_scenarios(listed)
    return isinstance(root, yaml.SequenceNode) and _lists_scenarios(root)


@functools.cache
def _untagged_loader() -> Any:
    """A composing loader that leaves untagged values' tags unresolved.  The
    decision needs explicit tags alone (``!include``), and resolving the
    others (is it a number? a bool?) is a good part of composing a file;
    the parser and composer, and so what is valid YAML, are PyYAML's own."""
    import yaml

    loader: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)

    class Untagged(loader):  # type: ignore[misc]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            return ""

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

    return Untagged


def _lists_scenarios(node: yaml.SequenceNode) -> bool:
    import yaml

    return any(
        item.tag == _INCLUDE_TAG or (isinstance(item, yaml.MappingNode) and _has_key(item, _PROBES))
        for item in node.value
    )


def _has_key(node: yaml.MappingNode, name: str) -> bool:
    return _value(node, name) is not None


def _value(node: yaml.MappingNode, name: str) -> yaml.Node | None:
    import yaml

    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == name:
            found: yaml.Node = value
            return found
    return None
