"""Safe YAML with positions: the node tree (for line numbers), the data, and
``!include`` of other YAML or text files that cannot leave the scenario root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ScenarioError

Loc = tuple[str | int, ...]


class _IncludingLoader(yaml.SafeLoader):
    """SafeLoader plus ``!include path`` relative to the including file."""

    base_dir: Path
    root: Path
    display: str
    depth: int


def _include(loader: _IncludingLoader, node: yaml.Node) -> Any:
    mark = node.start_mark
    target = loader.construct_scalar(node)  # type: ignore[arg-type]
    if not isinstance(target, str) or not target:
        raise ScenarioError.at(
            loader.display, mark.line + 1, mark.column + 1, "!include needs a path"
        )
    path = (loader.base_dir / target).resolve()
    if not path.is_relative_to(loader.root):
        raise ScenarioError.at(
            loader.display,
            mark.line + 1,
            mark.column + 1,
            f"!include {target!r} leaves the scenario root {loader.root}",
        )
    if not path.is_file():
        raise ScenarioError.at(
            loader.display, mark.line + 1, mark.column + 1, f"!include {target!r}: no such file"
        )
    if loader.depth >= 8:
        raise ScenarioError.at(
            loader.display, mark.line + 1, mark.column + 1, "!include nested too deeply (a cycle?)"
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix not in (".yaml", ".yml"):
        return text
    _, data = parse_yaml(
        text, str(path), base_dir=path.parent, root=loader.root, depth=loader.depth + 1
    )
    return data


_IncludingLoader.add_constructor("!include", _include)


def parse_yaml(
    text: str, display: str, *, base_dir: Path, root: Path, depth: int = 0
) -> tuple[yaml.Node, Any]:
    loader = _IncludingLoader(text)
    loader.base_dir, loader.root, loader.display, loader.depth = (
        base_dir,
        root.resolve(),
        display,
        depth,
    )
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError.at(display, 1, 1, "empty file: expected a scenario mapping")
        _reject_duplicate_keys(node, display)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ScenarioError.at(display, line, col, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError.at(display, 1, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return node, data


def _reject_duplicate_keys(node: yaml.Node, path: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    mark = key.start_mark
                    raise ScenarioError.at(
                        path, mark.line + 1, mark.column + 1, f"duplicate key {key.value!r}"
                    )
                seen.add(key.value)
            _reject_duplicate_keys(value, path)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _reject_duplicate_keys(child, path)


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
