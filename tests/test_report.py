"""The result frame, the HTML report and the terminal summary, from records built in code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.report.html import render_report, tokens_chart, write_report
from pytest_ctxeval.report.terminal import summary_lines
from pytest_ctxeval.results.frame import (
    classification_matrix,
    records_frame,
    strategy_summary,
)
from pytest_ctxeval.results.record import CLASSIFICATIONS, ResultRecord

PAYLOAD = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def rec(**kw: Any) -> ResultRecord:
    base: dict[str, Any] = {
        "run_id": "run-1",
        "scenario": "needle",
        "strategy": "full",
        "model": "ctxeval/oracle",
        "probe": "p1",
        "verdict": "pass",
        "classification": "ok",
    }
    base.update(kw)
    return ResultRecord(**base)


@pytest.fixture
def records() -> list[ResultRecord]:
    return [
        # full: everything passes; two scenarios.
        rec(probe="p1", cumulative_input_tokens=1000, prompt_tokens=400, full_prompt_tokens=400),
        rec(probe="p2", cumulative_input_tokens=1100, prompt_tokens=500, full_prompt_tokens=500),
        rec(
            scenario="followup",
            cumulative_input_tokens=300,
            prompt_tokens=300,
            full_prompt_tokens=300,
        ),
        # headtail: one context loss on needle, one model miss on followup.
        rec(
            strategy="headtail",
            probe="p1",
            cumulative_input_tokens=600,
            prompt_tokens=100,
            full_prompt_tokens=400,
            cost_usd=0.01,
            memory_retrievals=2,
        ),
        rec(
            strategy="headtail",
            probe="p2",
            verdict="fail",
            classification="context_loss",
            cumulative_input_tokens=700,
            prompt_tokens=100,
            full_prompt_tokens=500,
            cost_usd=0.02,
            memory_retrievals=1,
            expected={"contains_any": ["secret-9981"]},
            failed_checks=["contains_any: none of ['secret-9981'] in answer"],
            answer="I do not know the key.",
            ground_truth_answer="The key is secret-9981.",
            ground_truth_verdict="pass",
            fact_survival={"api-key": "in_store", "no-req": "gone"},
        ),
        rec(
            strategy="headtail",
            scenario="followup",
            verdict="fail",
            classification="model_miss",
            cumulative_input_tokens=200,
            prompt_tokens=100,
            full_prompt_tokens=300,
            answer="Input A.",
            ground_truth_answer="Input A, probably.",
            ground_truth_verdict="fail",
        ),
        # sliding: divergent (no expectation) and an error.
        rec(
            strategy="sliding",
            verdict="fail",
            classification="divergent",
            cumulative_input_tokens=500,
            answer="Port 8080.",
            ground_truth_answer="Port 5432.",
        ),
        rec(
            strategy="sliding",
            scenario="followup",
            verdict="error",
            classification="error",
            error="TimeoutError: model did not answer in 60 s",
            cumulative_input_tokens=90,
        ),
    ]


# -- frame ---------------------------------------------------------------------------


def test_records_frame_has_one_row_per_record_and_keeps_dicts(records):
    df = records_frame(records)
    assert len(df) == len(records)
    assert list(df.columns)[: len(ResultRecord.model_fields)] == list(ResultRecord.model_fields)
    assert df.loc[4, "fact_survival"] == {"api-key": "in_store", "no-req": "gone"}


def test_cumulative_tokens_count_each_session_once(records):
    summary = strategy_summary(records_frame(records))
    # Probes p1/p2 of "needle" share one session: max(1000, 1100), plus followup's 300.
    assert summary.loc["full", "cumulative_input_tokens"] == 1100 + 300
    assert summary.loc["headtail", "cumulative_input_tokens"] == 700 + 200
    assert summary.loc["sliding", "cumulative_input_tokens"] == 500 + 90


def test_budget_sweep_sessions_are_separate():
    rs = [
        rec(budget=1000, cumulative_input_tokens=50),
        rec(budget=1000, probe="p2", cumulative_input_tokens=55),
        rec(budget=2000, cumulative_input_tokens=80),
    ]
    assert strategy_summary(records_frame(rs)).loc["full", "cumulative_input_tokens"] == 55 + 80


def test_strategy_summary_counts_and_ratios(records):
    summary = strategy_summary(records_frame(records))
    assert list(summary.index) == ["full", "headtail", "sliding"]
    for c in CLASSIFICATIONS:  # every classification has a column, even if all zero
        assert c in summary.columns
    head = summary.loc["headtail"]
    assert (head["items"], head["passed"]) == (3, 1)
    assert (head["ok"], head["context_loss"], head["model_miss"], head["rescued"]) == (1, 1, 1, 0)
    assert head["memory_retrievals"] == 3
    assert head["cost_usd"] == pytest.approx(0.03)
    assert head["mean_prompt_tokens"] == pytest.approx(100)
    assert head["tokens_saved_vs_full"] == pytest.approx(1 - 300 / 1200)
    assert summary.loc["full", "tokens_saved_vs_full"] == pytest.approx(0.0)
    # No full-context size known: the ratio is undefined, not 0 or 1.
    assert summary["tokens_saved_vs_full"].isna()["sliding"]


def test_classification_matrix_shows_worst_with_counts(records):
    m = classification_matrix(records_frame(records))
    assert list(m.index) == ["followup", "needle"]
    assert list(m.columns) == ["full", "headtail", "sliding"]
    assert m.loc["needle", "full"] == "ok 2"
    assert m.loc["needle", "headtail"] == "context_loss 1/2"
    assert m.loc["followup", "headtail"] == "model_miss 1"
    assert m.loc["followup", "sliding"] == "error 1"
    assert m.loc["needle", "sliding"] == "divergent 1"


def test_matrix_leaves_pairs_that_did_not_run_empty():
    m = classification_matrix(records_frame([rec(), rec(scenario="other", strategy="rag")]))
    assert m.loc["other", "full"] == ""
    assert m.loc["needle", "rag"] == ""


# -- HTML ----------------------------------------------------------------------------


def section(html: str, sid: str) -> str:
    match = re.search(rf'<section id="{sid}">(.*?)</section>', html, re.S)
    assert match, f"section {sid!r} missing"
    return match.group(1)


def test_report_summary_and_matrix(records):
    html = render_report(records, run_info={"model": "ctxeval/oracle", "run_id": "run-1"})
    summary = section(html, "summary")
    for name in ("full", "headtail", "sliding"):
        assert f'<th class="rowhead">{name}</th>' in summary
    for passed in ("3/3", "1/3", "0/2"):  # full, headtail, sliding
        assert f'<td class="num">{passed}</td>' in summary
    matrix = section(html, "matrix")
    # Short labels in the cell, the full classification in its tooltip.
    assert '<td class="cell context_loss" title="context_loss 1/2">loss 1/2</td>' in matrix
    assert '<td class="cell ok" title="ok 2">ok 2</td>' in matrix
    assert '<td class="cell model_miss" title="model_miss 1">miss 1</td>' in matrix
    assert "ctxeval/oracle" in html and "run-1" in html


def test_report_chart_has_a_bar_per_strategy(records):
    chart = section(render_report(records), "tokens")
    assert chart.count("<rect ") == 3
    assert "1,400" in chart and "900" in chart and "590" in chart


def test_failures_section_lists_non_ok_records_with_details(records):
    failures = section(render_report(records), "failures")
    assert failures.count('<article class="failure">') == 4  # loss, miss, divergent, error
    # The context-loss record, in full.
    assert "&#34;contains_any&#34;: [" in failures  # pretty JSON, quotes escaped
    assert "none of [&#39;secret-9981&#39;] in answer" in failures
    assert "I do not know the key." in failures
    assert "The key is secret-9981." in failures
    assert '<td class="gone">gone</td>' in failures and "api-key" in failures
    assert "TimeoutError: model did not answer in 60 s" in failures
    # Divergent probes carry a diff against the full-context answer.
    assert "-Port 5432." in failures and "+Port 8080." in failures
    # ok records are not failures.
    assert "needle · full · p1" not in failures


def test_scenario_and_model_text_is_escaped():
    attr_break = '"><img src=x onerror=alert(2)>'
    rs = [
        rec(
            scenario=f"needle-{PAYLOAD}",
            strategy=f"s{PAYLOAD}",
            verdict="fail",
            classification="context_loss",
            answer=f"Sure: {PAYLOAD} {attr_break}",
            ground_truth_answer=PAYLOAD,
            expected={"contains": PAYLOAD},
            failed_checks=[PAYLOAD],
            error=PAYLOAD,
            fact_survival={PAYLOAD: "gone"},
            probe=PAYLOAD,
        ),
    ]
    html = render_report(rs, title=PAYLOAD, run_info={PAYLOAD: PAYLOAD})
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    # Every place the payload went shows it as text.
    assert html.count(ESCAPED) >= 10
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in html


def test_chart_escapes_labels():
    svg = str(tokens_chart({"<b>x</b>&": 10}))
    assert "<b>" not in svg
    assert "&lt;b&gt;x&lt;/b&gt;&amp;" in svg


def test_report_loads_no_external_resources(records):
    records[0] = rec(answer="See https://example.com/docs and <a href='http://evil'>x</a>")
    html = render_report(records)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert "url(" not in html and "@import" not in html and "<link" not in html


def test_empty_records_render_a_page_that_says_so(tmp_path: Path):
    html = render_report([])
    assert "No results were recorded." in html
    assert "<table" not in html
    out = write_report(tmp_path / "nested" / "dir" / "report.html", [])
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_write_report_creates_parent_dirs(tmp_path: Path, records):
    out = write_report(tmp_path / "a" / "b" / "ctxeval.html", records, title="Nightly")
    text = out.read_text(encoding="utf-8")
    assert "<title>Nightly</title>" in text and "headtail" in text


# -- terminal ------------------------------------------------------------------------


def test_summary_lines_counts(records):
    lines = summary_lines(records)
    assert lines == [
        "ctxeval: 8 items, 3 strategies",
        "full      passed 3/3  context_loss 0  model_miss 0  other 0  tokens 1,400",
        "headtail  passed 1/3  context_loss 1  model_miss 1  other 0  tokens   900",
        "sliding   passed 0/2  context_loss 0  model_miss 0  other 2  tokens   590",
    ]


def test_summary_lines_without_records():
    assert summary_lines([]) == ["ctxeval: no results recorded"]


def test_new_classifications_are_ranked_counted_and_explained():
    records = [
        rec(classification="unstable", verdict="fail", repeat=3, pass_rate=1 / 3),
        rec(
            strategy="sliding",
            classification="beyond_context",
            verdict="fail",
            no_ground_truth="the full context (9,000 tokens) exceeds the model's context "
            "window (8,192 tokens)",
        ),
    ]
    html = render_report(records)
    matrix = section(html, "matrix")
    assert "unstable" in matrix and "beyond" in matrix
    failures = section(html, "failures")
    assert "None: the full context (9,000 tokens) exceeds" in failures
    (line,) = [x for x in summary_lines(records) if x.startswith("sliding")]
    assert "other 1" in line  # beyond_context is counted, not lost
