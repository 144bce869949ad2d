"""The source distribution: what ``python -m build --sdist`` ships.

The tests are not in it: they run against the repository (its scenarios/,
strategies/, benchmarks/, CI scripts and docs), which an sdist does not
carry, so a half set of tests there would only fail.  The sdist is for
installing: the package, its templates and presets, the README and licence."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import setuptools  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # builds the sdist: a few seconds

BUILD = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"


def sdist_files(out: Path) -> set[str]:
    """The sdist's files, relative to its top folder."""
    # The test extra brings a setuptools that reads pyproject's license fields.
    assert int(setuptools.__version__.split(".")[0]) >= 77, setuptools.__version__
    built = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    name = built.stdout.strip().splitlines()[-1]
    with tarfile.open(out / name) as archive:
        return {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}


def test_the_sdist_holds_the_package_and_no_tests(tmp_path: Path) -> None:
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not run from a source checkout")
    files = sdist_files(tmp_path)
    assert not [f for f in files if f.startswith("tests/") or f == "tests"], sorted(files)
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "pytest_ctxeval/plugin.py",
        "pytest_ctxeval/py.typed",
        "pytest_ctxeval/report/templates/report.html.j2",
    ):
        assert needed in files
    assert any(f.startswith("pytest_ctxeval/strategies/shipped_presets/") for f in files)
