"""The report's summary table hides what is zero everywhere, says when costs
mean nothing (a mock model), and an errored item shows "not measured"."""

from __future__ import annotations

import re
from typing import Any

from pytest_ctxeval.report.html import render_report
from pytest_ctxeval.report.page_data import read_page_data
from pytest_ctxeval.report.terminal import summary_lines
from pytest_ctxeval.results.record import ResultRecord


def rec(**kw: Any) -> ResultRecord:
    base: dict[str, Any] = {
        "run_id": "run-1",
        "scenario": "needle",
        "strategy": "full",
        "model": "ctxeval/oracle",
        "probe": "p1",
        "verdict": "pass",
        "classification": "ok",
        "cumulative_input_tokens": 1000,
        "prompt_tokens": 400,
        "full_prompt_tokens": 400,
    }
    base.update(kw)
    return ResultRecord(**base)


def summary_of(html: str) -> str:
    match = re.search(r'<section id="summary">(.*?)</section>', html, re.S)
    assert match
    return match.group(1)


def headers(summary: str) -> list[str]:
    thead = summary.split("<tbody>")[0]
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", thead)]


def test_summary_hides_columns_zero_for_every_strategy_and_says_which() -> None:
    records = [
        rec(),
        rec(strategy="truncate", verdict="fail", classification="context_loss", prompt_tokens=90),
    ]
    summary = summary_of(render_report(records))
    shown = headers(summary)
    assert "context_loss" in shown and "ok" in shown
    for hidden in ("divergent", "model_miss", "memory retrievals", "beyond_context"):
        assert hidden not in shown
    note = re.search(r'<p class="legend" id="summary-hidden">(.*?)</p>', summary, re.S)
    assert note, summary
    assert "divergent" in note.group(1) and "memory retrievals" in note.group(1)


def test_summary_costs_are_not_applicable_under_a_mock_model() -> None:
    mock = summary_of(render_report([rec(), rec(strategy="truncate")]))
    assert "n/a (mock model)" in mock
    assert "$0.0000" not in mock
    priced = summary_of(render_report([rec(model="gpt-4o-mini", cost_usd=0.0123)]))
    assert "n/a (mock model)" not in priced
    assert "$0.0123" in priced


def test_an_errored_item_shows_not_measured_not_zero() -> None:
    records = [
        rec(),
        rec(
            strategy="broken",
            verdict="error",
            classification="error",
            error="ModelError: the server closed the connection",
            cumulative_input_tokens=0,
            prompt_tokens=0,
            full_prompt_tokens=0,
        ),
    ]
    html = render_report(records)
    # The page's script draws "not measured" in the four figures' cells of a
    # row that measured nothing (test_report_paging_browser.py sees it drawn).
    rows = read_page_data(html)["rows"]["columns"]
    assert (rows["strategy"], rows["measured"]) == (["broken", "full"], [False, True])
    assert 'data-not-measured="not measured"' in html
    summary = summary_of(html)
    broken = re.search(r'<th class="rowhead">broken</th>(.*?)</tr>', summary, re.S)
    assert broken and "not measured" in broken.group(1)
    (line,) = [line for line in summary_lines(records) if line.startswith("broken")]
    assert "tokens not measured" in line
    (full,) = [line for line in summary_lines(records) if line.startswith("full")]
    assert "not measured" not in full
