"""Load scenario YAML safely, validate it, and map every error to a line.

PyYAML's composer gives us nodes with positions; pydantic gives error
locations as key paths.  Walking the node tree along a location finds the
line and column to report.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..redact import register_scenario_secret
from ..text import occurs
from .build import BuildProblem, Conversation, build_conversation, generated_specs
from .errors import NotAScenario, Problem, ScenarioError, ScenarioWarning
from .generators import estimated_tokens, size_knob
from .limits import InvalidLimit, Limits
from .recorded_file import read_recorded_windows
from .schema import Expectation, Scenario
from .templating import (
    Renderer,
    TemplateProblem,
    check_variables,
    expand_matrix,
    matrix_size,
    matrix_suffix,
)
from .textfile import FileProblem, read_text_file
from .validation_text import _problems
from .yamlsource import parse_yaml, position

Loc = tuple[str | int, ...]


def load_scenarios(
    path: str | Path,
    *,
    display_path: str | None = None,
    root: str | Path | None = None,
    limits: Limits | None = None,
) -> list[Scenario]:
    """All scenarios in one YAML file, or ScenarioError naming file:line:col."""
    conversations = load_conversations(path, display_path=display_path, root=root, limits=limits)
    return [c.scenario for c in conversations]


def load_conversations(
    path: str | Path,
    *,
    display_path: str | None = None,
    root: str | Path | None = None,
    limits: Limits | None = None,
    only_if: Callable[[yaml.Node], bool] | None = None,
) -> list[Conversation]:
    """Load, validate and build every scenario of one file.  ``!include``
    may not leave ``root`` (default: the file's directory).  ``limits``
    defaults to the built-in limits with any ``CTXEVAL_MAX_*`` variables.
    ``only_if``: NotAScenario when the file's composed YAML does not pass it
    (see ``parse_yaml``)."""
    path = Path(path)
    shown = display_path or str(path)
    limits = _limits(limits, shown)
    try:
        text = read_text_file(path, limits)
    except FileProblem as exc:
        message = "file not found" if exc.missing else str(exc)
        raise ScenarioError.at(shown, exc.line, exc.column, message) from None
    source = path.resolve()
    base = source.parent
    root_dir = Path(root) if root else base
    return _guarded(shown, lambda: _parse(text, shown, base, root_dir, limits, (source,), only_if))


def parse_conversations(
    text: str,
    path: str,
    *,
    base_dir: Path | None = None,
    root: Path | None = None,
    limits: Limits | None = None,
) -> list[Conversation]:
    """Every scenario in ``text``, the contents of the file shown as ``path``."""
    limits = _limits(limits, path)
    base = base_dir or Path.cwd()
    return _guarded(path, lambda: _parse(text, path, base, root or base, limits, ()))


def _guarded(path: str, load: Callable[[], list[Conversation]]) -> list[Conversation]:
    """``load()``, with any failure as a ScenarioError: one file never stops the run."""
    try:
        return load()
    except (ScenarioError, NotAScenario):
        raise
    except RecursionError:
        raise ScenarioError.at(path, 1, 1, "nested too deeply to load") from None
    except Exception as exc:  # noqa: BLE001 - a bug of ours, reported as one
        raise ScenarioError.at(
            path,
            1,
            1,
            f"could not load the file ({type(exc).__name__}: {str(exc)[:300]}); this is a bug in "
            "pytest-ctxeval, please report it with the file",
        ) from None


def _limits(limits: Limits | None, path: str) -> Limits:
    if limits is not None:
        return limits
    try:
        return Limits.from_env()
    except InvalidLimit as exc:
        raise ScenarioError.at(path, 1, 1, str(exc)) from None


def _parse(
    text: str,
    path: str,
    base_dir: Path,
    root: Path,
    limits: Limits,
    chain: tuple[Path, ...],
    only_if: Callable[[yaml.Node], bool] | None = None,
) -> list[Conversation]:
    if len(text) > limits.file_bytes // 4 and len(text.encode()) > limits.file_bytes:
        found = f"the file has {len(text.encode()):,} bytes"
        raise ScenarioError.at(path, 1, 1, limits.exceeded("file_bytes", found))
    tree, data = parse_yaml(
        text, path, base_dir=base_dir, root=root, limits=limits, chain=chain, only_if=only_if
    )
    if isinstance(data, dict) and set(data) == {"scenarios"}:
        items = data["scenarios"]
        if not isinstance(items, list) or not items:
            line, col = position(tree, ("scenarios",))
            raise ScenarioError.at(
                path, line, col, "'scenarios' must be a list of scenarios (at least one)"
            )
        entries: list[tuple[Any, Loc]] = [(item, ("scenarios", i)) for i, item in enumerate(items)]
    elif isinstance(data, dict):
        entries = [(data, ())]
    elif isinstance(data, list) and data:
        entries = [(item, (i,)) for i, item in enumerate(data)]
    else:
        raise ScenarioError.at(
            path,
            1,
            1,
            f"expected a scenario: a mapping with id, turns, probes, ...; got {_described(data)}",
        )
    file = _FileBudget(limits)
    file.base_dir, file.root = base_dir, root  # where recorded_windows files may be read
    built: list[Conversation] = []
    problems: list[Problem] = []
    notes: list[Problem] = []  # become ScenarioWarnings
    for item, prefix in entries:
        try:
            conversations = _build_entry(item, prefix, tree, file)
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
    counts = Counter(c.id for c in built)
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    if duplicates:
        raise ScenarioError.at(path, 1, 1, f"duplicate scenario id(s): {', '.join(duplicates)}")
    for conversation in built:  # the file's regexes share its regex time
        for needle in conversation.scenario.needles or []:
            if needle.secret:
                answers = [needle.answer] if isinstance(needle.answer, str) else needle.answer
                for value in answers or []:
                    register_scenario_secret(value)
        for probe in conversation.probes:
            for expect in (probe.expect, probe.constraint_check):
                if expect is not None:
                    expect._source_file = path
    return built


class _FileBudget:
    """What the scenarios of one file have used of the file's limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.renderer = Renderer(limits)
        self.scenarios = 0  # after matrix expansion
        self.generated_tokens = 0
        self.base_dir = self.root = Path.cwd()

    def add_matrix(self, combinations: int) -> None:
        self.scenarios += combinations
        if self.scenarios > self.limits.matrix:
            found = (
                f"matrix expands to {combinations:,} scenarios"
                if self.scenarios == combinations
                else f"the matrices of this file expand to {self.scenarios:,} scenarios"
            )
            raise TemplateProblem(("matrix",), self.limits.exceeded("matrix", found))

    def add_generated(self, scenario: Scenario) -> None:
        """Estimated before anything is generated, so a huge request fails at once."""
        for loc, spec in generated_specs(scenario):
            tokens = estimated_tokens(spec)
            self.generated_tokens += tokens
            if self.generated_tokens > self.limits.generated_tokens:
                asked = f"{spec.kind} with {size_knob(spec)} makes about {tokens:,} tokens"
                found = (
                    asked
                    if self.generated_tokens == tokens
                    else f"generated text in this file comes to about "
                    f"{self.generated_tokens:,} tokens here ({asked})"
                )
                raise BuildProblem(loc, self.limits.exceeded("generated_tokens", found))


def _build_entry(item: Any, prefix: Loc, root: yaml.Node, file: _FileBudget) -> list[Conversation]:
    """One YAML entry: expanded by its matrix, rendered, validated, built."""
    if not isinstance(item, dict):
        raise BuildProblem(
            (),
            f"expected a scenario: a mapping with id, turns, probes, ...; got {_described(item)}",
        )
    template = dict(item)
    # Templating is opt-in: only a scenario with vars or a matrix is a template.
    templated = "vars" in template or "matrix" in template
    matrix = template.pop("matrix", None)
    variables = check_variables(template.pop("vars", None) or {})
    file.add_matrix(matrix_size(matrix))
    out = []
    for combo in expand_matrix(matrix):
        data = (
            file.renderer.render_tree(template, {**variables, **combo}) if templated else template
        )
        if combo and isinstance(data.get("id"), str):
            data["id"] = data["id"] + matrix_suffix(combo)
        scenario = Scenario.model_validate(data)
        file.add_generated(scenario)
        conversation = build_conversation(scenario)
        conversation.matrix = combo
        if scenario.recorded_windows is not None:
            conversation.recorded_windows = read_recorded_windows(
                scenario.recorded_windows, file.base_dir, file.root, file.limits
            )
        for i, probe in enumerate(conversation.probes):
            line, column = position(root, (*prefix, "probes", i))
            conversation.probe_lines[probe.id] = line
            conversation.probe_columns[probe.id] = column
        out.append(conversation)
    return out


def _described(value: Any) -> str:
    """What a value is, for "expected X; got Y"."""
    if value is None:
        return "nothing (an empty document)"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "\u2026"
        return f"the text {shown!r}"
    if isinstance(value, list):
        return "an empty list" if not value else f"a list of {len(value):,} items"
    return f"a {type(value).__name__}"


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
    found += [("f1", s) for s in ([expect.f1] if isinstance(expect.f1, str) else expect.f1 or [])]
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
