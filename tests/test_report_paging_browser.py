"""A report of hundreds of items in headless Chromium: the item table shows
a page at a time, filters and sorting run over every row, the drill-down
unpacks the clicked item's own details (packed a chunk of items at a time),
and the CSV export holds every row the filters show, on every page."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from many_items import ITEMS, many_records
from test_report_browser import CHROMIUM, Browser, launched, open_item

from pytest_ctxeval.report.html import write_report
from pytest_ctxeval.results.record import ResultRecord

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason=f"{CHROMIUM} is missing"),
]

PAGE_ROWS = 100


@pytest.fixture
def records() -> list[ResultRecord]:
    return many_records()


@pytest.fixture
def report(tmp_path: Path, records: list[ResultRecord]) -> Path:
    return write_report(tmp_path / "report.html", records, run_info={"run_id": "run-new"})


@pytest.fixture
def browser() -> Iterator[Browser]:
    with launched(accept_downloads=True) as opened:
        yield opened


def row_ids(page: Any) -> list[tuple[str, str, str]]:
    return [
        tuple(r)
        for r in page.eval_on_selector_all(
            "#items-table tbody tr",
            "rows => rows.map(r => [1, 2, 3].map(i => r.cells[i].getAttribute('data-v')))",
        )
    ]


def download_csv(page: Any) -> list[list[str]]:
    with page.expect_download() as info:
        page.click("#items-csv")
    return list(csv.reader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8"))))


def test_pages_of_the_table_and_the_clicked_items_own_details(
    report: Path, records: list[ResultRecord], browser: Browser
) -> None:
    page = browser.page
    page.goto(report.as_uri(), wait_until="load")
    assert page.inner_text("#item-count") == str(ITEMS)
    first = row_ids(page)
    assert len(first) == PAGE_ROWS and first[0] == ("conv-0", "full", "qa-00")
    assert page.inner_text("#page-status") == "page 1 of 6: items 1–100 of 600"
    assert page.is_disabled("#page-prev") and not page.is_disabled("#page-next")
    page.click("#page-next")
    assert row_ids(page)[0] == ("conv-1", "full", "qa-00")  # row 101
    page.click("#page-last")
    last = row_ids(page)
    assert page.inner_text("#page-status") == "page 6 of 6: items 501–600 of 600"
    assert last[-1] == ("conv-5", "truncate", "qa-24") and page.is_disabled("#page-next")

    # An item of the last chunk: its own answer, window and facts, not a neighbour's.
    open_item(page, page.locator("#items-table tbody tr", has_text="qa-07").nth(2))
    assert page.inner_text("#detail-title") == "conv-5 · sliding · qa-07"
    assert page.inner_text("#detail pre.answer") == "answer of conv-5/sliding/qa-07"
    assert page.inner_text("#detail .part.summary pre") == "window of conv-5/sliding/qa-07"
    assert page.inner_text("#detail table.facts td.gone") == "gone"
    assert "fact-conv-5-qa-07" in page.inner_text("#detail table.facts")
    assert page.url.endswith(f"#item-{ITEMS - 25 - 25 + 7}")
    page.keyboard.press("Escape")

    # The errored item measured nothing: its four figures say so.
    cells = page.locator("#items-table tbody tr").last.locator("td.num").all_inner_texts()
    assert cells == ["not measured"] * 4
    # Kept from the earlier run: conv-0's rows say which run they came from.
    page.click("#page-first")
    assert page.locator("#items-table tbody tr .from-run").count() == PAGE_ROWS
    assert page.locator(".from-run").first.inner_text().startswith("from run run-old")

    # An address names an item: the table turns to its page, the drill-down opens it.
    page.goto(report.as_uri() + "#item-260")
    page.wait_for_selector('#detail[aria-busy="false"][data-item="260"]')
    assert page.inner_text("#detail pre.answer") == "answer of conv-2/sliding/qa-10"
    assert page.inner_text("#page-status").startswith("page 3 of 6")
    assert page.locator("#item-260.current").count() == 1

    # Two clicks at once: the later item is the one drawn.
    page.evaluate(
        "() => { const r = document.querySelectorAll('#items-table tbody tr');"
        " r[3].click(); r[4].click(); }"
    )
    page.wait_for_selector('#detail[aria-busy="false"]')
    assert page.inner_text("#detail-title") == "conv-2 · full · qa-04"
    browser.check_clean()


def test_filters_and_sorting_cover_every_page_and_the_csv_every_row(
    report: Path, browser: Browser
) -> None:
    page = browser.page
    page.goto(report.as_uri(), wait_until="load")
    everything = download_csv(page)
    assert everything[0][:5] == ["scenario", "strategy", "probe", "classification", "pytest"]
    assert len(everything) == 1 + ITEMS
    keys = {tuple(r[:3]) for r in everything[1:]}
    assert len(keys) == ITEMS
    assert {r[5] for r in everything[1:] if r[0:3] == ["conv-5", "truncate", "qa-24"]} == {
        "not measured"
    }

    # A filter over every page: 150 sliding items, two pages of them.
    page.select_option("#f-strategy", "sliding")
    assert page.inner_text("#item-count") == f"150 of {ITEMS}"
    assert page.inner_text("#page-status") == "page 1 of 2: items 1–100 of 150"
    page.click("#page-next")
    assert {r[1] for r in row_ids(page)} == {"sliding"} and len(row_ids(page)) == 50
    sliding = download_csv(page)
    assert len(sliding) == 1 + 150 and {r[1] for r in sliding[1:]} == {"sliding"}

    # Search reaches the answers of rows on other pages; a tag filters by the whole tag.
    page.fill("#f-search", "answer of conv-4/sliding/qa-1")
    assert sorted(r[2] for r in row_ids(page)) == [f"qa-1{n}" for n in range(10)]
    page.fill("#f-search", "")
    page.select_option("#f-strategy", "")
    page.select_option("#f-tag", "group-conv-3")
    assert {r[0] for r in row_ids(page)} == {"conv-3"}
    assert page.inner_text("#item-count") == f"100 of {ITEMS}"
    assert page.is_hidden("#pager")  # one page
    page.select_option("#f-tag", "")

    # Sorting orders every row, not only the page shown: the largest first.
    page.click("#items-table th[data-key=prompt] button")
    page.click("#items-table th[data-key=prompt] button")
    tokens = page.eval_on_selector_all(
        "#items-table tbody tr", "rows => rows.map(r => Number(r.cells[6].getAttribute('data-v')))"
    )
    assert tokens == sorted(tokens, reverse=True) and tokens[0] == 1_000 + ITEMS - 2
    sorted_csv = download_csv(page)
    prompts = [int(r[5]) for r in sorted_csv[1:] if r[5].isdigit()]
    assert prompts == sorted(prompts, reverse=True) and len(prompts) == ITEMS - 1
    assert sorted_csv[-1][5] == "not measured"  # sorts below every figure
    browser.remote = [u for u in browser.remote if not u.startswith("blob:")]
    browser.check_clean()


def test_the_pager_fits_a_phone_screen(report: Path, browser: Browser) -> None:
    page = browser.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(report.as_uri(), wait_until="load")
    assert page.is_visible("#pager")
    box = page.locator("#pager").bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert not page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
    page.click("#page-next")
    assert page.inner_text("#page-status").startswith("page 2 of 6")
    browser.check_clean()
