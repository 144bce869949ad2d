"""Open a real report in headless Chromium: the payload stays text, nothing loads from outside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.report.html import write_report
from pytest_ctxeval.results.record import ResultRecord

CHROMIUM = "/usr/bin/chromium"
SCREENSHOT = Path("/tmp/ctxeval-report.png")
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


def sample_records() -> list[ResultRecord]:
    return [
        rec(),
        rec(scenario="followup-input-b", probe="input-b", cumulative_input_tokens=820_000),
        rec(
            strategy="headtail",
            cumulative_input_tokens=1_230_456,
            prompt_tokens=12_000,
            memory_retrievals=1,
            cost_usd=0.0123,
        ),
        rec(
            strategy="headtail",
            scenario="followup-input-b",
            probe="input-b",
            verdict="fail",
            classification="context_loss",
            cumulative_input_tokens=310_000,
            prompt_tokens=9_000,
            expected={"contains_any": ["refund status"]},
            failed_checks=["contains_any: none of ['refund status'] in answer"],
            answer=f"Input B was {PAYLOAD} something else.",
            ground_truth_answer="Input B is 'refund status' (377 traces).",
            ground_truth_verdict="pass",
            fact_survival={"api-key": "in_store", "no-requests": "verbatim"},
        ),
        rec(
            strategy="summarize",
            verdict="fail",
            classification="divergent",
            cumulative_input_tokens=905_000,
            prompt_tokens=20_000,
            answer="Use port 8080.",
            ground_truth_answer="Use port 5432.",
            fact_survival={"db-port": "transformed"},
        ),
        rec(
            strategy="summarize",
            scenario="followup-input-b",
            probe="input-b",
            verdict="error",
            classification="error",
            error="TimeoutError: no answer after 3 retries",
            cumulative_input_tokens=200_000,
        ),
        rec(
            strategy="sliding-8",
            verdict="fail",
            classification="model_miss",
            cumulative_input_tokens=400_000,
            prompt_tokens=8_000,
            answer="I don't know.",
            ground_truth_answer="I don't know either.",
            ground_truth_verdict="fail",
        ),
    ]


def test_report_in_headless_chromium(tmp_path: Path):
    records = sample_records()
    report = write_report(
        tmp_path / "report.html",
        records,
        run_info={
            "model": "ctxeval/oracle",
            "run_id": "browser-run",
            "items": len(records),
            "time": "2025-01-01 12:00:00 UTC",
        },
    )
    dialogs: list[str] = []
    remote: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})

            def on_dialog(dialog: Any) -> None:
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", on_dialog)

            # A self-contained report requests nothing but its own file.
            def on_request(request: Any) -> None:
                if not request.url.startswith("file:"):
                    remote.append(request.url)

            page.on("request", on_request)
            page.goto(report.as_uri(), wait_until="load")

            answer = page.locator("pre.answer", has_text="Input B was")
            assert answer.is_visible()
            assert PAYLOAD in answer.inner_text()
            assert page.locator("table.summary tbody tr").count() == 4  # one per strategy
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            browser.close()

    assert dialogs == [], f"script ran in the report: {dialogs}"
    assert remote == [], f"report loaded external resources: {remote}"
    assert SCREENSHOT.stat().st_size > 0
