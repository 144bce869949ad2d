"""``ctxeval init``: a project that ``pytest`` runs usefully at once.

Three scenarios, one of each kind (a needle in a tool output, an early
counter-intuitive constraint, a follow-up reference), that pass under
``full`` on the mock model and that the cheap built-ins lose; a commented
strategy of the project's own in ``strategies/``; a pytest.ini that runs
them all; the CI workflow docs/ci.md describes.  The templates are package
data, read through importlib.resources, so an installed wheel has them.

An existing file is never replaced without ``--force``; a project whose
pyproject.toml already holds pytest's settings gets no pytest.ini (it would
shadow them), only the settings to add there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

# (where in the project, the template's name in this package)
FILES = (
    ("scenarios/needle-in-tool-output.yaml", "needle-in-tool-output.yaml"),
    ("scenarios/early-constraint.yaml", "early-constraint.yaml"),
    ("scenarios/followup-reference.yaml", "followup-reference.yaml"),
    ("strategies/pinned_window.py", "pinned_window.py.txt"),
    ("pytest.ini", "pytest.ini"),
    (".github/workflows/ctxeval.yml", "ctxeval.yml"),
)
BASELINE_COMMAND = "pytest --ctx-update-baseline"
_PYPROJECT_SECTION = re.compile(r"^\s*\[tool\.pytest\.ini_options\]", re.MULTILINE)


@dataclass(frozen=True)
class Written:
    path: str
    outcome: str  # "created", "overwritten" or "skipped"
    why: str = ""

    def line(self) -> str:
        return f"{self.outcome:<11} {self.path}" + (f"  ({self.why})" if self.why else "")


def template(name: str) -> str:
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def scaffold(target: Path, *, force: bool = False) -> list[Written]:
    """Write the project's files under ``target`` (created if need be)."""
    target.mkdir(parents=True, exist_ok=True)
    done = []
    for relpath, name in FILES:
        path = target / relpath
        if relpath == "pytest.ini" and _pyproject_has_pytest(target):
            why = "pyproject.toml has [tool.pytest.ini_options]; add the settings below there"
            done.append(Written(relpath, "skipped", why))
            continue
        if path.is_symlink() or (path.exists() and not path.is_file()):
            done.append(Written(relpath, "skipped", "not a regular file; left alone"))
            continue
        existed = path.exists()
        if existed and not force:
            done.append(Written(relpath, "skipped", "exists; --force overwrites it"))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template(name), encoding="utf-8")
        done.append(Written(relpath, "overwritten" if existed else "created"))
    return done


def report_lines(done: list[Written], target: Path) -> list[str]:
    lines = [w.line() for w in done]
    if any(w.path == "pytest.ini" and "pyproject" in w.why for w in done):
        settings = [
            line
            for line in template("pytest.ini").splitlines()
            if line.strip() and not line.startswith(("#", "["))
        ]
        lines += ["", "[tool.pytest.ini_options]"]
        lines += [
            f'{key.strip()} = "{value.strip()}"'
            for key, _, value in (line.partition("=") for line in settings)
        ]
    if all(w.outcome == "skipped" for w in done):
        lines += [
            "",
            f"nothing written in {target}: every file is already there (--force overwrites them)",
        ]
        return lines
    where = "" if target.resolve() == Path.cwd().resolve() else f"cd {target} && "
    run, baseline = f"  {where}pytest", f"  {where}{BASELINE_COMMAND}"
    width = max(len(run), len(baseline)) + 4  # the comments in one column
    lines += [
        "",
        "next:",
        f"{run:<{width}}# the scenarios under each strategy",
        f"{baseline:<{width}}# writes ctxeval-baseline.json: commit it,",
        f"{'':<{width}}# CI gates every change against it",
        "the report: reports/ctxeval.html (ctxeval view opens it)",
    ]
    return lines


def _pyproject_has_pytest(target: Path) -> bool:
    pyproject = target / "pyproject.toml"
    try:
        return bool(_PYPROJECT_SECTION.search(pyproject.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        return False
