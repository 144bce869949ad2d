"""Open real reports in headless Chromium: filters, sorting, search and the
drill-down work without a server, text from the run stays text, nothing loads
from outside, and the page fits a 390 px phone screen.

``CTXEVAL_UPDATE_SCREENSHOT=1`` also writes the desktop screenshot the README
shows, docs/images/report.png (kept out of ordinary runs: the report's header
names the run, so every run would change the file)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import CtxProject

from pytest_ctxeval.report.html import write_report
from pytest_ctxeval.results.record import ResultRecord

CHROMIUM = "/usr/bin/chromium"
README_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs/images/report.png"
MAX_SCREENSHOT_BYTES = 300_000
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAYLOAD = "<script>alert(1)</script>"

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"{CHROMIUM} is missing (apt-get install -y chromium)",
    ),
]


class Browser:
    """One headless page that notes dialogs, console errors and remote requests."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.remote: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        # A self-contained report requests nothing but its own file.
        page.on(
            "request", lambda r: None if r.url.startswith("file:") else self.remote.append(r.url)
        )

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def check_clean(self) -> None:
        assert self.dialogs == [], f"script ran in the report: {self.dialogs}"
        assert self.errors == [], f"console errors: {self.errors}"
        assert self.remote == [], f"report loaded external resources: {self.remote}"


@contextmanager
def launched(**page_options: Any) -> Iterator[Browser]:
    """Headless Chromium with one desktop-sized page, closed however the test ends."""
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 860}, **page_options)
            yield Browser(page)
        finally:
            chromium.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    with launched() as opened:
        yield opened


def visible_rows(page: Any) -> list[list[str]]:
    """(scenario, strategy, probe, classification) of each row shown, in order."""
    return page.eval_on_selector_all(
        "#items-table tbody tr:not([hidden])",
        "rows => rows.map(r => [1, 2, 3, 4].map(i => r.cells[i].textContent.trim()))",
    )


def open_item(page: Any, row: Any) -> None:
    """Click an item's row and wait for its drill-down: the page unpacks the
    details of the item's chunk first, a moment after the click."""
    row.click()
    page.wait_for_selector('#detail[aria-busy="false"]')


def filtered_to(page: Any, strategy: str) -> None:
    """Wait for an address's filters: the page applies them on the
    hashchange event that follows a link or a new address, a moment later."""
    page.wait_for_function(
        "strategy => document.getElementById('f-strategy').value === strategy", arg=strategy
    )


# -- a report of a real run --------------------------------------------------------------

OPS = """
id: deploy-token
description: A secret in the middle of a JSON dump.
tags: [needle, tool-output]
system: You are an assistant with access to the deployment database.
turns:
  - user: Dump the deployment records for the checkout service.
  - tool:
      name: query_deployments
      args: {service: checkout}
      generate: {kind: json_rows, rows: 120, seed: 3}
  - assistant: That is 120 records; most deployments succeeded.
  - generate: {kind: chitchat, turns: 6, seed: 7}
needles:
  - id: token
    turn: 3
    text: '{"DEPLOY_TOKEN": "tok-4471-alpha", "note": "rotated manually by oncall"}'
    question: What is the DEPLOY_TOKEN?
    answer: tok-4471-alpha
probes:
  - {id: token, needle: token}
  - {id: zebra, user: "What is the zebra called?", expect: {contains: Zorro}}
"""

GRID = """
id: locker
description: A locker number at three depths of a chatty session.
tags: [needle, grid]
matrix:
  depth: [0.1, 0.9]
  turns: [6, 12]
system: You are a helpful assistant.
turns:
  - generate: {kind: chitchat, turns: "{{ turns }}", seed: 81}
needles:
  - id: locker
    depth: "{{ depth }}"
    role: user
    text: "My gym locker number is 4417."
    question: What is my gym locker number?
    answer: "4417"
probes:
  - {id: locker, needle: locker}
"""


@pytest.fixture
def run_report(ctx: CtxProject) -> Path:
    ctx.scenario("ops", OPS)
    ctx.scenario("grid", GRID)
    result = ctx.run("--ctx-strategy=full,headtail,truncate,sliding(turns=2)")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    return ctx.path / "reports/ctxeval.html"


def test_filter_search_sort_and_drill_down(run_report: Path, browser: Browser, tmp_path: Path):
    page = browser.page
    page.goto(run_report.as_uri(), wait_until="load")
    total = page.locator("#items-table tbody tr").count()
    assert total == (2 + 4) * 4  # (ops probes + grid scenarios) x strategies

    # Filter by classification: only context losses remain, and the count says so.
    page.select_option("#f-classification", "context_loss")
    rows = visible_rows(page)
    assert rows and {r[3] for r in rows} == {"context_loss"}
    assert page.inner_text("#item-count") == f"{len(rows)} of {total}"

    # Free-text search over ids and answers; the classification filter still applies.
    page.select_option("#f-classification", "")
    page.fill("#f-search", "zebra")
    assert {tuple(r[:3]) for r in visible_rows(page)} == {
        ("deploy-token", s, "zebra") for s in ("full", "headtail", "sliding[turns:2]", "truncate")
    }
    page.fill("#f-search", "")

    # Sort by a number column, both ways.
    def prompt_tokens() -> list[int]:
        return page.eval_on_selector_all(
            "#items-table tbody tr:not([hidden])",
            "rows => rows.map(r => Number(r.cells[6].getAttribute('data-v')))",
        )

    page.click("#items-table th[data-key=prompt] button")
    assert prompt_tokens() == sorted(prompt_tokens())
    page.click("#items-table th[data-key=prompt] button")
    assert prompt_tokens() == sorted(prompt_tokens(), reverse=True)

    # A matrix cell shows its items: the scenario and strategy filters are set.
    page.click("table.matrix a[href='#items?scenario=deploy-token&strategy=truncate']")
    filtered_to(page, "truncate")
    assert {tuple(r[:2]) for r in visible_rows(page)} == {("deploy-token", "truncate")}
    assert page.locator("#f-scenario").is_visible()

    # The drill-down: the window with its marked parts, and the word diff.
    open_item(page, page.locator("#items-table tbody tr:not([hidden])", has_text="token").first)
    panel = page.locator("#detail")
    assert panel.is_visible()
    assert "deploy-token · truncate · token" in page.inner_text("#detail-title")
    assert panel.locator(".part.pruned").count() == 1  # the dump, cut to fit
    dropped = panel.locator(".part.dropped").first.inner_text()
    assert dropped.startswith("messages ") and dropped.endswith(" tokens)")
    assert panel.locator(".diff del").count() >= 1
    assert "tok-4471-alpha" in panel.locator("pre.ground-truth").inner_text()
    assert panel.locator("td.gone").inner_text() == "gone"
    page.screenshot(path=str(tmp_path / "drilldown.png"))

    # headtail: the cut message names its memory, and the retrieval is shown.
    page.keyboard.press("Escape")
    assert not panel.is_visible()
    page.goto(run_report.as_uri() + "#items?scenario=deploy-token&strategy=headtail")
    filtered_to(page, "headtail")
    open_item(page, page.locator("#items-table tbody tr:not([hidden])", has_text="token").first)
    assert panel.locator(".part.shortened .memory").first.inner_text() == "memory m1"
    assert panel.locator(".part.tools").count() == 1
    assert "retrieve_memory" in panel.inner_text()
    browser.check_clean()


def test_the_report_fits_a_phone_screen(run_report: Path, browser: Browser):
    page = browser.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(run_report.as_uri(), wait_until="load")

    def page_scrolls_sideways() -> bool:
        return page.evaluate("document.documentElement.scrollWidth > window.innerWidth")

    assert not page_scrolls_sideways()
    # The matrix scrolls inside its box, its scenario column staying put.
    box = page.locator("#matrix .scroll")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    first = page.locator("table.matrix tbody th.rowhead").first
    before = first.bounding_box()
    box.evaluate("b => { b.scrollLeft = 200; }")
    after = first.bounding_box()
    assert before and after and after["x"] == pytest.approx(before["x"], abs=1)
    second = page.locator("table.matrix tbody td").first.bounding_box()
    assert second and second["x"] < before["x"] + before["width"]  # scrolled under it
    # The drill-down takes the screen, and still does not scroll sideways.
    open_item(page, page.locator("#items-table tbody tr").first)
    assert page.locator("#detail").is_visible()
    assert not page_scrolls_sideways()
    width = page.locator("#detail").bounding_box()
    assert width and width["width"] <= 390
    browser.check_clean()


def test_readme_screenshot(run_report: Path, browser: Browser, tmp_path: Path):
    """The desktop view with a context loss opened: what the README shows."""
    page = browser.page
    page.goto(run_report.as_uri() + "#items?scenario=deploy-token&strategy=truncate")
    filtered_to(page, "truncate")
    open_item(page, page.locator("#items-table tbody tr:not([hidden])", has_text="token").first)
    # The page from its header; the panel from the answers down to the window.
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate(
        "const body = document.getElementById('detail-body');"
        "body.scrollTop = body.querySelector('.answers').offsetTop - 8;"
    )
    update = os.environ.get("CTXEVAL_UPDATE_SCREENSHOT") == "1"
    target = README_SCREENSHOT if update else tmp_path / "report.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target), type="png")
    assert 0 < target.stat().st_size < MAX_SCREENSHOT_BYTES
    browser.check_clean()


# -- hostile text ------------------------------------------------------------------------


def rec(**kw: Any) -> ResultRecord:
    base: dict[str, Any] = {
        "run_id": "browser-run",
        "scenario": "needle-depth-50",
        "strategy": "full",
        "model": "ctxeval/oracle",
        "probe": "key",
        "verdict": "pass",
        "classification": "ok",
        "cumulative_input_tokens": 4_120_000,
        "prompt_tokens": 160_000,
        "full_prompt_tokens": 160_000,
    }
    base.update(kw)
    return ResultRecord(**base)


def test_text_from_the_run_stays_text(tmp_path: Path, browser: Browser):
    records = [
        rec(),
        rec(
            strategy=f"headtail{PAYLOAD}",
            scenario=f"followup-{PAYLOAD}",
            probe="input-b",
            verdict="fail",
            classification="context_loss",
            tags=[PAYLOAD],
            answer=f"Input B was {PAYLOAD} </script><img src=x onerror=alert(2)>",
            ground_truth_answer="Input B is 'refund status' (377 traces).",
            ground_truth_verdict="pass",
            fact_survival={PAYLOAD: "gone"},
            window_trace=[
                {"mark": "summary", "role": "user", "text": f"Summary: {PAYLOAD}", "tokens": 9},
                {"mark": "kept", "role": "user", "n": 3, "text": "Which input?", "tokens": 5},
            ],
        ),
    ]
    report = write_report(tmp_path / "report.html", records)
    page = browser.page
    page.goto(report.as_uri(), wait_until="load")
    page.select_option("#f-tag", PAYLOAD)
    (row,) = visible_rows(page)
    assert row[0] == f"followup-{PAYLOAD}"
    open_item(page, page.locator("#items-table tbody tr:not([hidden])"))
    answer = page.locator("#detail pre.answer").inner_text()
    assert PAYLOAD in answer and "<img src=x" in answer
    assert PAYLOAD in page.locator("#detail .part.summary pre").inner_text()
    assert page.locator("#detail img").count() == 0
    browser.check_clean()
