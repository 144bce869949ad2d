"""The report's polish in headless Chromium: the series chart's legend
toggles and highlights strategies, a phone screen never breaks a word and
keeps the matrix header in view, and the item table downloads as CSV."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject
from test_report_browser import CHROMIUM, GRID, OPS, Browser, filtered_to, launched, open_item, rec

from pytest_ctxeval.report.html import write_report

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is missing"),
]

STRATEGIES = "full,headtail,truncate,sliding(turns=2),sliding(turns=4)"


@pytest.fixture
def browser() -> Iterator[Browser]:
    with launched(accept_downloads=True) as opened:
        yield opened


@pytest.fixture
def run_report(ctx: CtxProject) -> Path:
    ctx.scenario("ops", OPS)
    ctx.scenario("grid", GRID)
    result = ctx.run(f"--ctx-strategy={STRATEGIES}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    return ctx.path / "reports/ctxeval.html"


def shown_series(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "figure.series-chart:not([hidden]) g.series-group",
        "gs => gs.filter(g => getComputedStyle(g).display !== 'none')"
        ".map(g => g.getAttribute('data-series')).sort()",
    )


def test_series_legend_toggles_and_highlights(run_report: Path, browser: Browser) -> None:
    page = browser.page
    page.goto(run_report.as_uri(), wait_until="load")
    figure = page.locator("figure.series-chart:not([hidden])")
    names = figure.locator("button.series-toggle").evaluate_all(
        "bs => bs.map(b => b.getAttribute('data-series'))"
    )
    assert len(names) == 5
    # At first: full and the two cheapest strategies, the others toggled off.
    shown = shown_series(page)
    assert len(shown) == 3 and "full" in shown
    hidden = sorted(set(names) - set(shown))
    assert figure.locator(f"button[data-series='{hidden[0]}']").get_attribute("aria-pressed") == (
        "false"
    )
    # A click shows a hidden strategy; another hides it again; full can go too.
    figure.locator(f"button[data-series='{hidden[0]}']").click()
    assert shown_series(page) == sorted([*shown, hidden[0]])
    figure.locator(f"button[data-series='{hidden[0]}']").click()
    figure.locator("button[data-series='full']").click()
    assert shown_series(page) == sorted(set(shown) - {"full"})
    # Hover picks one out: the others fade.
    picked = sorted(set(shown) - {"full"})[0]
    figure.locator(f"button[data-series='{picked}']").hover()

    def opacity(name: str) -> float:
        return float(
            figure.locator(f"g.series-group[data-series='{name}']").evaluate(
                "g => getComputedStyle(g).opacity"
            )
        )

    other = sorted(set(shown) - {"full", picked})[0]
    assert opacity(picked) == 1 and opacity(other) < 0.5
    page.mouse.move(0, 0)
    assert opacity(other) == 1
    browser.check_clean()


# Where a token may wrap inside itself: ids and code.
TOKENS = "code, pre, kbd, .id, dd, #detail-title, .chip, .heatmaps figcaption, ul.calls, .memory"


def test_a_phone_screen_breaks_no_word(run_report: Path, browser: Browser) -> None:
    page = browser.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(run_report.as_uri(), wait_until="load")
    open_item(page, page.locator("#items-table tbody tr").first)  # the drill-down too
    broken = page.evaluate(
        """tokens => Array.from(document.querySelectorAll('body *')).filter(e => {
            const s = getComputedStyle(e);
            const splits = s.wordBreak === 'break-all' || s.overflowWrap === 'anywhere'
                || s.wordBreak === 'break-word';
            const text = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.data.trim());
            return splits && text && !e.closest(tokens);
        }).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40))""",
        TOKENS,
    )
    assert broken == []
    browser.check_clean()


def test_the_matrix_header_stays_in_view(tmp_path: Path, browser: Browser) -> None:
    records = [
        rec(scenario=f"scenario-{n:02d}", strategy=s) for n in range(40) for s in ("full", "rag")
    ]
    report = write_report(tmp_path / "report.html", records)
    page = browser.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(report.as_uri(), wait_until="load")
    box = page.locator("#matrix .scroll")
    assert box.evaluate("b => b.scrollHeight > b.clientHeight")
    header = page.locator("table.matrix thead th").nth(1)
    before = header.bounding_box()
    box.evaluate("b => { b.scrollTop = 400; }")
    after = header.bounding_box()
    assert before and after and after["y"] == pytest.approx(before["y"], abs=1)
    browser.check_clean()


def test_csv_download_holds_the_rows_the_filters_show(run_report: Path, browser: Browser) -> None:
    page = browser.page
    page.goto(run_report.as_uri() + "#items?strategy=truncate")
    filtered_to(page, "truncate")
    shown = page.locator("#items-table tbody tr:not([hidden])").count()
    with page.expect_download() as info:
        page.click("#items-csv")
    download = info.value
    assert download.suggested_filename == "ctxeval-items.csv"
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text(encoding="utf-8"))))
    assert rows[0][:4] == ["scenario", "strategy", "probe", "classification"]
    assert len(rows) == 1 + shown
    assert {r[1] for r in rows[1:]} == {"truncate"}
    assert all(r[5].isdigit() for r in rows[1:])  # prompt tokens, as numbers
    browser.remote = [u for u in browser.remote if not u.startswith("blob:")]
    browser.check_clean()
