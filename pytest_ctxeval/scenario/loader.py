"""Load scenario YAML safely, validate it, and map every error to a line.

PyYAML's composer gives us nodes with positions; pydantic gives error
locations as key paths.  Walking the node tree along a location finds the
line and column to report.
"""

from __future__ import annotations

import types
import typing
import warnings
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError

from ..evaluate.matching import occurs
from .build import BuildProblem, Conversation, build_conversation
from .errors import Problem, ScenarioError, ScenarioWarning
from .schema import TURN_KINDS, Expectation, Scenario
from .templating import TemplateProblem, expand_matrix, matrix_suffix, render_tree
from .yamlsource import find_node, parse_yaml, position

Loc = tuple[str | int, ...]


def load_scenarios(
    path: str | Path, *, display_path: str | None = None, root: str | Path | None = None
) -> list[Scenario]:
    """All scenarios in one YAML file, or ScenarioError naming file:line:col."""
    return [c.scenario for c in load_conversations(path, display_path=display_path, root=root)]


def load_conversations(
    path: str | Path, *, display_path: str | None = None, root: str | Path | None = None
) -> list[Conversation]:
    """Load, validate and build every scenario of one file.  ``!include``
    may not leave ``root`` (default: the file's directory)."""
    path = Path(path)
    shown = display_path or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError.at(shown, 1, 1, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError.at(shown, 1, 1, f"cannot read file: {exc}") from None
    base = path.resolve().parent
    return parse_conversations(text, shown, base_dir=base, root=Path(root) if root else base)


def parse_conversations(
    text: str, path: str, *, base_dir: Path | None = None, root: Path | None = None
) -> list[Conversation]:
    base_dir = base_dir or Path.cwd()
    tree, data = parse_yaml(text, path, base_dir=base_dir, root=root or base_dir)
    if isinstance(data, dict) and set(data) == {"scenarios"}:
        items = data["scenarios"]
        if not isinstance(items, list):
            line, col = position(tree, ("scenarios",))
            raise ScenarioError.at(path, line, col, "'scenarios' must be a list of scenarios")
        entries: list[tuple[Any, Loc]] = [(item, ("scenarios", i)) for i, item in enumerate(items)]
    elif isinstance(data, dict):
        entries = [(data, ())]
    elif isinstance(data, list):
        entries = [(item, (i,)) for i, item in enumerate(data)]
    else:
        raise ScenarioError.at(path, 1, 1, "expected a scenario mapping (id, turns, probes, ...)")
    built: list[Conversation] = []
    problems: list[Problem] = []
    notes: list[Problem] = []  # become ScenarioWarnings
    for item, prefix in entries:
        try:
            conversations = _build_entry(item, prefix, tree, path)
        except ValidationError as exc:
            problems.extend(_problems(exc, tree, prefix, path))
        except (BuildProblem, TemplateProblem) as exc:
            line, col = position(tree, (*prefix, *exc.loc))
            problems.append(Problem(path, line, col, str(exc)))
        else:
            built.extend(conversations)
            for conversation in conversations:
                notes.extend(_given_away(conversation, tree, prefix, path))
    # A matrix repeats a probe once per combination: one warning is enough.
    problems.extend(_warn(list(dict.fromkeys(notes))))
    if problems:
        raise ScenarioError(sorted(set(problems), key=lambda p: (p.line, p.column, p.message)))
    ids = [c.id for c in built]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ScenarioError.at(path, 1, 1, f"duplicate scenario id(s): {', '.join(duplicates)}")
    return built


def _build_entry(item: Any, prefix: Loc, root: yaml.Node, path: str) -> list[Conversation]:
    """One YAML entry: expanded by its matrix, rendered, validated, built."""
    if not isinstance(item, dict):
        Scenario.model_validate(item)  # raises the proper "expected a mapping" error
    template = dict(item)
    # Templating is opt-in: only a scenario with vars or a matrix is a template.
    templated = "vars" in template or "matrix" in template
    matrix = template.pop("matrix", None)
    variables = template.pop("vars", None) or {}
    if not isinstance(variables, dict):
        raise TemplateProblem(("vars",), "'vars' must be a mapping of names to values")
    out = []
    for combo in expand_matrix(matrix):
        data = render_tree(template, {**variables, **combo}) if templated else template
        if combo and isinstance(data.get("id"), str):
            data["id"] = data["id"] + matrix_suffix(combo)
        conversation = build_conversation(Scenario.model_validate(data))
        conversation.matrix = combo
        for i, probe in enumerate(conversation.probes):
            conversation.probe_lines[probe.id] = position(root, (*prefix, "probes", i))[0]
        out.append(conversation)
    return out


def _given_away(
    conversation: Conversation, root: yaml.Node, prefix: Loc, path: str
) -> list[Problem]:
    """Expected strings the probe's question already contains: a model that
    merely repeats the question passes such a check."""
    notes = []
    for i, probe in enumerate(conversation.probes):
        expected: list[tuple[str, str, bool]] = []  # (what, string, case-sensitive)
        if probe.needle is not None and conversation.scenario.probes[i].expect is None:
            answers = probe.expect.contains_any if probe.expect else None
            expected += [(f"needle {probe.needle!r} answer", s, False) for s in answers or []]
        else:
            expected += _expected_strings("", probe.expect)
        if probe.constraint_check is not None:
            owner = f"constraint {probe.constraint!r} check "
            expected += _expected_strings(owner, probe.constraint_check)
        line, col = position(root, (*prefix, "probes", i))
        for what, text, case_sensitive in expected:
            if occurs(text, probe.question, case_sensitive):
                message = (
                    f"probe {probe.id!r}: {what} {text!r} already occurs in the question "
                    f"{probe.question!r}; a model that merely repeats the question passes "
                    "this check"
                )
                notes.append(Problem(path, line, col, message))
    return notes


def _expected_strings(owner: str, expect: Expectation | None) -> list[tuple[str, str, bool]]:
    """(owner + key, string, case-sensitive) for every string an answer must contain."""
    if expect is None:
        return []
    found = [("contains", expect.contains), ("equals", expect.equals)]
    found += [("contains_any", s) for s in expect.contains_any or []]
    found += [("contains_all", s) for s in expect.contains_all or []]
    return [(owner + key, s, expect.case_sensitive) for key, s in found if s is not None]


def _warn(notes: list[Problem]) -> list[Problem]:
    """Issue each note as a ScenarioWarning at its file and line; return the
    ones the warning filters turned into errors (``-W error``), so they are
    reported like any other problem instead of as a traceback."""
    errors = []
    for note in notes:
        try:
            warnings.warn_explicit(ScenarioWarning.of(note), ScenarioWarning, note.path, note.line)
        except ScenarioWarning:
            errors.append(note)
    return errors


def _problems(exc: ValidationError, root: yaml.Node, prefix: Loc, path: str) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc, model = _strip_tags(tuple(err["loc"]))
        # A LocatedValueError from a model validator says where below the model it is.
        loc = (*loc, *getattr((err.get("ctx") or {}).get("error"), "loc", ()))
        node, key_node = find_node(root, (*prefix, *loc))
        target = key_node if err["type"] == "extra_forbidden" and key_node else node
        mark = target.start_mark
        problems.append(Problem(path, mark.line + 1, mark.column + 1, _message(err, loc, model)))
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
    if kind == "turn_kind" and isinstance(err.get("input"), dict):
        keys = ", ".join(repr(k) for k in err["input"]) or "none"
        return (
            f"{where}: a turn needs exactly one of the keys user, assistant, tool, generate; "
            f"got {keys}"
        )
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
