"""Load scenario YAML safely, validate it, and map every error to a line.

PyYAML's composer gives us nodes with positions; pydantic gives error
locations as key paths.  Walking the node tree along a location finds the
line and column to report.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError

from .build import BuildProblem, Conversation, build_conversation
from .errors import Problem, ScenarioError
from .schema import TURN_KINDS, Scenario

Loc = tuple[str | int, ...]


def load_scenarios(path: str | Path, *, display_path: str | None = None) -> list[Scenario]:
    """All scenarios in one YAML file, or ScenarioError naming file:line:col."""
    return [c.scenario for c in load_conversations(path, display_path=display_path)]


def load_conversations(path: str | Path, *, display_path: str | None = None) -> list[Conversation]:
    """Load, validate and build every scenario of one file."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError.at(shown, 1, 1, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError.at(shown, 1, 1, f"cannot read file: {exc}") from None
    return parse_conversations(text, shown)


def parse_conversations(text: str, path: str) -> list[Conversation]:
    root, data = _parse_yaml(text, path)
    if isinstance(data, dict) and set(data) == {"scenarios"}:
        items, prefix = data["scenarios"], ("scenarios",)
        if not isinstance(items, list):
            raise _problem_at(root, ("scenarios",), path, "'scenarios' must be a list of scenarios")
        entries = [(item, (*prefix, i)) for i, item in enumerate(items)]
    elif isinstance(data, dict):
        entries = [(data, ())]
    elif isinstance(data, list):
        entries = [(item, (i,)) for i, item in enumerate(data)]
    else:
        raise ScenarioError.at(path, 1, 1, "expected a scenario mapping (id, turns, probes, ...)")
    built: list[Conversation] = []
    problems: list[Problem] = []
    for item, prefix in entries:
        try:
            conversation = build_conversation(Scenario.model_validate(item))
            for i, probe in enumerate(conversation.probes):
                node, _ = _find_node(root, (*prefix, "probes", i))
                conversation.probe_lines[probe.id] = node.start_mark.line + 1
            built.append(conversation)
        except ValidationError as exc:
            problems.extend(_problems(exc, root, prefix, path))
        except BuildProblem as exc:
            node, _ = _find_node(root, (*prefix, *exc.loc))
            mark = node.start_mark
            problems.append(Problem(path, mark.line + 1, mark.column + 1, str(exc)))
    if problems:
        raise ScenarioError(problems)
    ids = [c.id for c in built]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ScenarioError.at(path, 1, 1, f"duplicate scenario id(s): {', '.join(duplicates)}")
    return built


def _parse_yaml(text: str, path: str) -> tuple[yaml.Node, Any]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError.at(path, 1, 1, "empty file: expected a scenario mapping")
        _reject_duplicate_keys(node, path)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ScenarioError.at(path, line, col, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError.at(path, 1, 1, f"invalid YAML: {exc}") from None
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


def _problems(exc: ValidationError, root: yaml.Node, prefix: Loc, path: str) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc, model = _strip_tags(tuple(err["loc"]))
        node, key_node = _find_node(root, (*prefix, *loc))
        target = key_node if err["type"] == "extra_forbidden" and key_node else node
        mark = target.start_mark
        problems.append(
            Problem(path, mark.line + 1, mark.column + 1, _message(err, loc, model))
        )
    return sorted(set(problems), key=lambda p: (p.line, p.column, p.message))


def _message(err: Any, loc: Loc, parent: type[BaseModel] | None) -> str:
    where = _dotted(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(parent.model_fields) if parent else ""
        hint = f"; expected one of: {allowed}" if allowed else ""
        return f"unknown key {loc[-1]!r} in {_dotted(loc[:-1]) or 'scenario'}{hint}"
    if kind == "missing":
        return f"missing required key {loc[-1]!r} in {_dotted(loc[:-1]) or 'scenario'}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _strip_tags(loc: Loc) -> tuple[Loc, type[BaseModel] | None]:
    """Drop union tags from a pydantic location, and find the model that
    owns the last key (for listing the keys it accepts)."""
    model: Any = Scenario
    kept: list[str | int] = []
    parent: type[BaseModel] | None = None
    for part in loc:
        options = _models_in(model)
        if isinstance(part, str) and len(options) > 1 and part in TURN_KINDS:
            model = next((m for m in options if part in m.model_fields), model)
            continue
        kept.append(part)
        current = options[0] if len(options) == 1 else None
        parent = current
        if current is not None and isinstance(part, str) and part in current.model_fields:
            model = current.model_fields[part].annotation
        elif isinstance(part, int):
            model = _item_type(model)
        else:
            model = None
    if kept and isinstance(kept[-1], str):
        return tuple(kept), parent
    return tuple(kept), _single_model(model)


def _single_model(tp: Any) -> type[BaseModel] | None:
    options = _models_in(tp)
    return options[0] if len(options) == 1 else None


def _models_in(tp: Any) -> list[type[BaseModel]]:
    if tp is None:
        return []
    tp = _unannotate(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    if typing.get_origin(tp) in (Union, types.UnionType):
        found: list[type[BaseModel]] = []
        for arg in typing.get_args(tp):
            found.extend(_models_in(arg))
        return found
    return []


def _item_type(tp: Any) -> Any:
    tp = _unannotate(tp)
    if typing.get_origin(tp) in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            if typing.get_origin(_unannotate(arg)) is list:
                tp = _unannotate(arg)
    if typing.get_origin(tp) is list:
        return typing.get_args(tp)[0]
    return None


def _unannotate(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _find_node(root: yaml.Node, loc: Loc) -> tuple[yaml.Node, yaml.Node | None]:
    """The deepest node along ``loc``, and the key node of its last step."""
    node, key_node = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(
                ((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part),
                None,
            )
            if match is None:
                return node, None
            key_node, node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node, key_node = node.value[part], None
        else:
            break
    return node, key_node


def _problem_at(root: yaml.Node, loc: Loc, path: str, message: str) -> ScenarioError:
    node, _ = _find_node(root, loc)
    return ScenarioError.at(path, node.start_mark.line + 1, node.start_mark.column + 1, message)
