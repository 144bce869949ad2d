"""The package's layers point one way.

The import graph is read from the source with `ast`, imports inside functions
and under TYPE_CHECKING included: a module imported late is still a
dependency. Two rules hold: the graph has no cycle, and the lower layers
(the YAML data of `scenario/`, the `strategies/`, the model clients of
`llm/`) never import the scoring, the report, the gate or the pytest wiring.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_ctxeval"

LOWER = ("scenario", "strategies", "llm")
UPPER = (
    "evaluate",
    "report",
    "gate",
    "plugin",
    "collect",
    "session",
    "options",
    "run_end",
    "session_finish",
    "scenario_config",
    "history",
    "live",
    "duplicate_ids",
    "failure_text",
    "xdist_collect",
    "xdist_runs",
    "cli",
)

# Left as they are for now, each for its reason; an entry that no longer
# holds fails test_the_known_exceptions_still_hold, so the lists only shrink.
KNOWN_CYCLES: list[list[str]] = []
# Not split yet (package paths, lines today).
KNOWN_LONG: dict[str, int] = {}

# module -> {imported module: "file:line" of the first import}
Graph = dict[str, dict[str, str]]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported(node: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> list[str]:
    """The package's modules one import statement names."""
    found: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.append(name)
        return found
    if node.level:
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        full = ".".join(base + ([node.module] if node.module else []))
    else:
        full = node.module or ""
    for alias in node.names:
        if f"{full}.{alias.name}" in modules:
            found.append(f"{full}.{alias.name}")
        elif full in modules:
            found.append(full)
    return found


def import_graph(root: Path = PACKAGE) -> Graph:
    paths = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(paths)
    graph: Graph = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = graph.setdefault(module, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(node, package, modules):
                    if target != module:
                        where = f"{path.relative_to(root.parent)}:{node.lineno}"
                        edges.setdefault(target, where)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return groups


def _under(module: str, tops: tuple[str, ...]) -> bool:
    rest = module.removeprefix("pytest_ctxeval.")
    return any(rest == top or rest.startswith(f"{top}.") for top in tops)


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    problems = []
    for group in cycles(graph):
        if group in KNOWN_CYCLES:
            continue
        members = set(group)
        arrows = [
            f"  {a} -> {b} ({where})"
            for a in group
            for b, where in sorted(graph[a].items())
            if b in members
        ]
        problems.append("import cycle among " + ", ".join(group) + ":\n" + "\n".join(arrows))
    assert not problems, "\n".join(problems)


def test_lower_layers_never_import_scoring_report_gate_or_pytest_wiring() -> None:
    graph = import_graph()
    wrong = [
        f"{where}: {a} imports {b}"
        for a, edges in sorted(graph.items())
        if _under(a, LOWER)
        for b, where in sorted(edges.items())
        if _under(b, UPPER)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_graph_sees_imports_inside_functions(tmp_path: Path) -> None:
    # the checker itself can fail: a late import and a relative one are arrows
    root = tmp_path / "pytest_ctxeval"
    (root / "llm").mkdir(parents=True)
    (root / "evaluate").mkdir()
    (root / "__init__.py").write_text("")
    (root / "llm" / "__init__.py").write_text("")
    (root / "evaluate" / "__init__.py").write_text("")
    (root / "evaluate" / "matching.py").write_text("from ..llm import tokens\n")
    (root / "llm" / "tokens.py").write_text("def f():\n    from ..evaluate import matching\n")
    graph = import_graph(root)
    assert graph["pytest_ctxeval.llm.tokens"] == {
        "pytest_ctxeval.evaluate.matching": "pytest_ctxeval/llm/tokens.py:2"
    }
    assert cycles(graph) == [["pytest_ctxeval.evaluate.matching", "pytest_ctxeval.llm.tokens"]]


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_is_over_four_hundred_lines(path: Path) -> None:
    lines = _lines(path)
    if path.relative_to(PACKAGE).as_posix() in KNOWN_LONG:
        pytest.skip(f"not split yet: {lines} lines")
    assert lines <= 400, f"{path.relative_to(PACKAGE.parent)} has {lines} lines (at most 400)"


def test_the_known_exceptions_still_hold() -> None:
    found = cycles(import_graph())
    gone = [group for group in KNOWN_CYCLES if group not in found]
    assert not gone, f"no longer a cycle, remove from KNOWN_CYCLES: {gone}"
    short = [name for name in KNOWN_LONG if _lines(PACKAGE / name) <= 400]
    assert not short, f"now at most 400 lines, remove from KNOWN_LONG: {short}"
