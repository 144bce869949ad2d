"""The compare page in headless Chromium, as a user sees it: an item that got
worse shows both runs' outcomes, and the page runs no script and loads
nothing from elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_history import two_results
from test_report_browser import ARGS, CHROMIUM, Browser, pytestmark, sync_api

from pytest_ctxeval.cli import main

__all__ = ["pytestmark"]  # the browser marker and the Chromium check, as the report's


@pytest.fixture
def page() -> Iterator[Browser]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield Browser(chromium.new_page(viewport={"width": 1280, "height": 860}))
        finally:
            chromium.close()


def test_the_compare_page_shows_what_got_worse(tmp_path: Path, page: Browser) -> None:
    a, b = two_results(tmp_path)
    out = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "-o", str(out)]) == 0
    page.page.goto(out.as_uri())
    rows = page.page.eval_on_selector_all(
        "#worse-table tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.trim()))",
    )
    assert len(rows) == 1
    probe, change, before, after = rows[0][2], rows[0][3], rows[0][4], rows[0][5]
    assert (probe, before, after) == ("falls", "ok", "context_loss")
    assert change.startswith("worse")
    assert page.page.is_visible("#worse-table >> text=I could not find that.")
    assert page.page.inner_text("#decision").startswith("1 got worse, 1 got better")
    page.check_clean()
