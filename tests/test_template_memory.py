"""Template memory is bounded by what a template allocates, not only by
what it prints: list repetition, nested lists, ``repr``, ``pprint``,
``tojson``, ``format``, joins and kept slices are estimated before they run.

``ctxeval validate`` on every template of the hostile corpus runs in a
subprocess that reports its own peak resident memory (VmHWM); the address space is
capped at 1 GB as well, so that a regression fails with a MemoryError instead
of taking the machine's memory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "fixtures" / "broken"
TEMPLATES = sorted(CORPUS.glob("template-*.yaml"))
PEAK_LIMIT_KB = 256 * 1024

VALIDATE = """
import resource, sys
cap = 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from pytest_ctxeval.cli import main
try:
    code = main(["validate", sys.argv[1]])
finally:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the process that
    # started this one (a big pytest worker), the high-water mark starts anew.
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    print("peak-kb", peak, file=sys.stderr)
sys.exit(code)
"""


def validate(path: Path) -> tuple[int, str, int]:
    done = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(path)], capture_output=True, text=True, timeout=300
    )
    peak = int(re.findall(r"^peak-kb (\d+)$", done.stderr, re.MULTILINE)[-1])
    return done.returncode, done.stdout + done.stderr, peak


def test_the_corpus_has_the_allocation_bombs():
    names = {p.name for p in TEMPLATES}
    for name in (
        "list-repeat",
        "nested-repeat",
        "list-doubling",
        "pprint",
        "tojson",
        "format-list",
        "repr-format",
        "string-filter",
        "join-lists",
        "slices-kept",
    ):
        assert f"template-{name}.yaml" in names


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_validate_stays_under_256_mb_on_every_hostile_template(path):
    code, text, peak = validate(path)
    assert code == 1, text
    assert re.search(rf"{re.escape(path.name)}:\d+:\d+: template", text), text
    assert "MemoryError" not in text, text
    assert "Traceback" not in text, text
    assert peak < PEAK_LIMIT_KB, f"peak {peak / 1024:.0f} MB: {text}"
