"""The compare page: one self-contained HTML file, rendered with the
report's jinja2 environment (autoescaping everything)."""

from __future__ import annotations

from pathlib import Path

from .compare import BETTER, GONE, NEW, NOTE, WORSE, RunComparison

TEMPLATE = "compare.html.j2"


def render_compare(result: RunComparison) -> str:
    from ..report.html import _environment

    context = {
        "title": f"pytest-ctxeval: {result.a.label} → {result.b.label}",
        "a": result.a,
        "b": result.b,
        "rows": result.rows,
        "worse": result.section(WORSE),
        "better": result.section(BETTER),
        "notes": result.section(NOTE),
        "new": result.section(NEW),
        "gone": result.section(GONE),
    }
    return _environment().get_template(TEMPLATE).render(**context)


def write_compare(path: Path, result: RunComparison) -> Path:
    from ..safe_files import replace_text

    replace_text(path, render_compare(result))
    return path
