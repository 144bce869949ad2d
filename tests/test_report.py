"""The result frame, the HTML report and the terminal summary, from records built in code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pytest_ctxeval.gate.compare import Change, Comparison
from pytest_ctxeval.report.charts import (
    depth_heatmaps,
    pareto_chart,
    prompt_series_charts,
    tokens_chart,
)
from pytest_ctxeval.report.drilldown import script_json
from pytest_ctxeval.report.html import render_report, write_report
from pytest_ctxeval.report.page_data import drilldown_items, read_page_data
from pytest_ctxeval.report.run_info import RunInfo
from pytest_ctxeval.report.terminal import summary_lines
from pytest_ctxeval.results.analysis import results_frame, strategy_table
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


def test_records_frame_is_the_frame_of_the_dumped_records(records):
    # Built from the attributes without copying them: the same columns, types
    # and values as from model_dump(), extra fields after the declared ones.
    rs = [*records, rec(probe="extra", shard_note="from an older writer")]
    dumped = pd.DataFrame.from_records([r.model_dump() for r in rs])
    declared = list(ResultRecord.model_fields)
    expected = dumped[[*declared, "shard_note"]]
    pd.testing.assert_frame_equal(records_frame(rs), expected)
    assert records_frame(rs)["shard_note"].isna().sum() == len(records)


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


DATA_BLOCK = re.compile(r'<script type="application/json" id="ctx-data">(.*?)</script>', re.S)


def embedded_data(html: str) -> dict[str, Any]:
    """The data the page's script reads, its drill-down chunks unpacked."""
    return read_page_data(html)


def item_in_chunk(
    html: str, scenario: str, strategy: str, probe: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An item's drill-down and the chunk whose texts, windows and facts it points into."""
    (found,) = [
        (i, chunk)
        for i, chunk in drilldown_items(embedded_data(html))
        if (i["scenario"], i["strategy"], i["probe"]) == (scenario, strategy, probe)
    ]
    return found


def item(html: str, scenario: str, strategy: str, probe: str) -> dict[str, Any]:
    return item_in_chunk(html, scenario, strategy, probe)[0]


def test_report_summary_and_matrix(records):
    html = render_report(records, run_info={"model": "ctxeval/oracle", "run_id": "run-1"})
    summary = section(html, "summary")
    for name in ("full", "headtail", "sliding"):
        assert f'<th class="rowhead">{name}</th>' in summary
    for passed in ("3/3", "1/3", "0/2"):  # full, headtail, sliding
        assert f'<td class="num">{passed}</td>' in summary
    matrix = section(html, "matrix")
    # Short labels in the cell, the full classification in its tooltip, and a
    # link to the pair's items (the page's script filters the table by it).
    assert (
        '<td class="cell context_loss" title="context_loss 1/2">'
        '<a href="#items?scenario=needle&amp;strategy=headtail">loss 1/2</a></td>'
    ) in matrix
    assert '<a href="#items?scenario=needle&amp;strategy=full">ok 2</a>' in matrix
    assert '<a href="#items?scenario=followup&amp;strategy=headtail">miss 1</a>' in matrix
    assert "ctxeval/oracle" in html and "run-1" in html


def test_summary_counts_link_to_their_items(records):
    summary = section(render_report(records), "summary")
    assert '<a href="#items?strategy=headtail&amp;classification=context_loss">1</a>' in summary
    assert '<td class="num zero">0</td>' in summary  # nothing to link to


def test_matrix_pairs_that_did_not_run_link_nowhere():
    matrix = section(render_report([rec(), rec(scenario="other", strategy="rag")]), "matrix")
    assert matrix.count('<td class="cell none" title="not run">—</td>') == 2
    assert matrix.count("<a href=") == 2


def test_report_chart_has_a_bar_per_strategy(records):
    chart = section(render_report(records), "tokens")
    assert chart.count('<rect class="bar"') == 3
    assert "1,400" in chart and "900" in chart and "590" in chart


def test_header_counts_items_as_pytest_does(records):
    # full: 3 passed; headtail: 1 passed, 1 context_loss (failed), 1 model_miss
    # (xfailed); sliding: divergent and error (both failed).
    outcomes = re.search(
        r'<p class="outcomes" id="outcomes">(.*?)</p>', render_report(records), re.S
    )
    assert outcomes
    shown = re.findall(r'<span class="outcome (\w+)">(\d+) \1</span>', outcomes.group(1))
    assert shown == [("failed", "3"), ("passed", "4"), ("xfailed", "1")]
    # --ctx-fail-on=fail: a model miss fails too.
    strict = render_report(records, fail_on="fail")
    assert '<span class="outcome failed">4 failed</span>' in strict
    assert "xfailed</span>" not in strict


def test_items_table_has_a_row_per_record_with_its_outcome(records):
    html = render_report(records)
    # The page's script draws the table from the rows' columns, a page at a time.
    assert 'Items (<span id="item-count">8</span>)' in section(html, "items")
    data = embedded_data(html)
    rows = data["rows"]["columns"]
    assert len(rows["scenario"]) == len(records)
    keys = list(zip(rows["scenario"], rows["strategy"], rows["probe"], strict=True))
    by_key = dict(zip(keys, rows["outcome"], strict=True))
    assert by_key[("needle", "headtail", "p2")] == "failed"
    assert by_key[("followup", "headtail", "p1")] == "xfailed"
    assert by_key[("needle", "full", "p1")] == "passed"
    lost = keys.index(("needle", "headtail", "p2"))
    assert (rows["prompt"][lost], rows["saved_text"][lost]) == (100, "80.0 %")
    assert rows["cumulative"][lost] == 700 and rows["cost_text"][lost] == "n/a (mock model)"
    # Row N is the drill-down's item N.
    drilled = [(i["scenario"], i["strategy"], i["probe"]) for i, _ in drilldown_items(data)]
    assert drilled == keys


def test_probes_with_the_same_fact_states_share_one_table(records):
    # Two probes of one session see the same facts in the same states: one
    # table in the report, not one per probe (an imported conversation has
    # hundreds of probes and hundreds of facts).
    lost = next(r for r in records if r.fact_survival)
    twin = lost.model_copy(update={"probe": "twin"})
    html = render_report([*records, twin])
    first, data = item_in_chunk(html, lost.scenario, lost.strategy, lost.probe)
    second, same = item_in_chunk(html, twin.scenario, twin.strategy, "twin")
    assert data == same  # a few items: one chunk
    assert data["facts"][first["facts"]] == lost.fact_survival
    assert first["facts"] == second["facts"]
    assert len(data["facts"]) == len(
        {tuple(sorted(r.fact_survival.items())) for r in records if r.fact_survival}
    )


def test_every_item_has_its_drilldown_data(records):
    html = render_report(records)
    assert len(list(drilldown_items(embedded_data(html)))) == len(records)
    lost, data = item_in_chunk(html, "needle", "headtail", "p2")
    assert lost["classification"] == "context_loss" and lost["outcome"] == "failed"
    assert lost["expected"] == {"contains_any": ["secret-9981"]}
    assert lost["failed_checks"] == ["contains_any: none of ['secret-9981'] in answer"]
    assert data["texts"][lost["answer"]] == "I do not know the key."
    assert data["texts"][lost["truth"]] == "The key is secret-9981."
    assert data["facts"][lost["facts"]] == {"api-key": "in_store", "no-req": "gone"}
    assert lost["tokens"]["prompt"] == 100 and lost["tokens"]["full"] == 500
    # The word diff runs from the full-context answer to the strategy's.
    assert lost["diff"] == [
        ["-", "The"],
        ["+", "I do not know the"],
        ["=", " key"],
        ["-", " is secret-9981"],
        ["=", "."],
    ]
    error = item(html, "followup", "sliding", "p1")
    assert error["error"] == "TimeoutError: model did not answer in 60 s"
    assert item(html, "needle", "full", "p1")["diff"] is None  # no answers to compare


def test_a_drilldown_window_is_stored_once_and_its_texts_once():
    trace = [
        {"mark": "kept", "role": "system", "n": 0, "text": "You help.", "tokens": 7},
        {"mark": "dropped", "from": 1, "to": 4, "count": 4, "tokens": 812},
        {"mark": "kept", "role": "user", "n": 5, "text": "Which port?", "tokens": 8},
    ]
    other = [{**trace[0]}, {"mark": "summary", "role": "user", "text": "Port 5432.", "tokens": 9}]
    rs = [
        rec(probe="a", window_trace=trace),
        rec(probe="b", window_trace=trace),
        rec(strategy="summarize", probe="a", window_trace=other),
    ]
    html = render_report(rs)
    (data,) = embedded_data(html)["details"]
    assert len(data["windows"]) == 2
    windows = {item(html, "needle", s, p)["window"] for s, p in [("full", "a"), ("full", "b")]}
    assert len(windows) == 1
    assert data["texts"].count("You help.") == 1  # shared by both windows
    (window,) = windows
    assert [p["mark"] for p in data["windows"][window]] == ["kept", "dropped", "kept"]
    assert data["texts"][data["windows"][window][0]["text"]] == "You help."


def test_header_shows_the_runs_metadata_from_run_info():
    info = RunInfo(
        plugin_version="9.9.9",
        git_commit="abc1234",
        started_at="2026-01-02T03:04:05+00:00",
        model="ctxeval/oracle",
        run_id="run-7",
        strategies={"sliding-8": {"kind": "sliding", "params": {"turns": 8}}},
    )
    html = render_report([rec(strategy="sliding-8", strategy_params={"turns": 8})], run_info=info)
    header = html[html.index("<header>") : html.index("</header>")]
    for shown in ("9.9.9", "abc1234", "2026-01-02T03:04:05+00:00", "run-7", "ctxeval/oracle"):
        assert f"<dd>{shown}</dd>" in header
    params = header[header.index('<table class="params">') :]  # in the header too
    assert '<th class="rowhead">sliding-8</th>' in params
    assert "<td>sliding</td>" in params and "<code>turns=8</code>" in params


def test_header_metadata_comes_from_the_records_without_run_info():
    # `ctxeval report` renders a results file: the records carry the run's metadata.
    html = render_report(
        [
            rec(
                plugin_version="0.1.0", git_commit="deadbee", started_at="2026-01-02T03:04:05+00:00"
            ),
            rec(
                probe="p2",
                plugin_version="0.1.0",
                git_commit="deadbee",
                started_at="2026-01-02T03:04:06+00:00",
            ),
        ]
    )
    header = html[html.index("<header>") : html.index("</header>")]
    assert "<dd>0.1.0</dd>" in header and "<dd>deadbee</dd>" in header
    assert "<dd>2026-01-02T03:04:05+00:00</dd>" in header  # the earliest start


def test_comparison_with_a_baseline_is_shown_and_decides_the_counts(records):
    key = ("s.yaml", "needle", "headtail", "p2")
    comparison = Comparison(
        regressions=[Change(key, "ok", "context_loss", "now a context loss")],
        improvements=[
            Change(
                ("s.yaml", "needle", "sliding", "p1"),
                "context_loss",
                "ok",
                "no longer a context loss",
            )
        ],
        new=[("s.yaml", "followup", "full", "p1")],
    )
    regressed = rec(
        scenario_file="s.yaml",
        strategy="headtail",
        probe="p2",
        verdict="fail",
        classification="context_loss",
    )
    known = rec(
        scenario_file="s.yaml",
        strategy="sliding",
        probe="p9",
        verdict="fail",
        classification="context_loss",
    )
    html = render_report([regressed, known, rec(scenario_file="s.yaml")], comparison=comparison)
    baseline = section(html, "baseline")
    assert "1 regressed, 1 improved" in baseline
    assert "ctxeval show s.yaml --id needle --strategy headtail --probe p2" in baseline
    assert (
        baseline.count('<rect class="worse"') == 2 and baseline.count('<rect class="better"') == 2
    )
    # Under the gate only the regression fails; the known loss is xfailed.
    assert '<span class="outcome failed">1 failed</span>' in html
    assert '<span class="outcome xfailed">1 xfailed</span>' in html
    assert 'id="baseline"' not in render_report(records)


def test_while_the_gate_writes_the_baseline_only_errors_fail(records):
    # --ctx-baseline-update: no comparison, yet the gate decided every item.
    html = render_report(records, gated=True)
    assert '<span class="outcome failed">1 failed</span>' in html  # sliding's error
    assert '<span class="outcome xfailed">3 xfailed</span>' in html
    assert "only a regression or an error fails" in html


def test_scenario_and_model_text_is_escaped():
    attr_break = '"><img src=x onerror=alert(2)>'
    rs = [
        rec(
            scenario=f"needle-{PAYLOAD}",
            strategy=f"s{PAYLOAD}",
            verdict="fail",
            classification="context_loss",
            answer=f"Sure: {PAYLOAD} {attr_break} </script><script>alert(3)</script>",
            ground_truth_answer=PAYLOAD,
            expected={"contains": PAYLOAD},
            failed_checks=[PAYLOAD],
            error=PAYLOAD,
            fact_survival={PAYLOAD: "gone"},
            probe=PAYLOAD,
            tags=[PAYLOAD, "it's"],
            strategy_params={PAYLOAD: PAYLOAD},
            window_trace=[{"mark": "summary", "role": "user", "text": PAYLOAD, "tokens": 1}],
            session_prompt_tokens=[10, 20],
            prompt_tokens=30,
            needle_depth=0.5,
            turns=4,
        ),
        rec(scenario=f"needle-{PAYLOAD}", probe="p2", needle_depth=0.1, turns=8),
    ]
    html = render_report(rs, title=PAYLOAD, run_info={PAYLOAD: PAYLOAD})
    # Our own two script elements, nothing else: no text opened or closed one.
    assert html.lower().count("<script") == 2
    assert html.lower().count("</script") == 2
    assert "<img" not in html.lower()
    # Every place the payload went as markup shows it as text...
    assert html.count(ESCAPED) >= 8
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" not in html  # not in the table at all
    # ...and the embedded JSON has no character that could end its element,
    # while reading back exactly what was recorded.
    block = DATA_BLOCK.search(html)
    assert block and "<" not in block.group(1) and ">" not in block.group(1)
    rows = embedded_data(html)["rows"]
    at = rows["columns"]["probe"].index(PAYLOAD)
    assert rows["tag_sets"][rows["columns"]["tags"][at]] == [PAYLOAD, "it's"]
    lost, data = item_in_chunk(html, f"needle-{PAYLOAD}", f"s{PAYLOAD}", PAYLOAD)
    assert data["texts"][lost["answer"]].endswith("</script><script>alert(3)</script>")
    assert lost["tags"] == [PAYLOAD, "it's"]
    # The charts escape their labels too (the series legend, the heatmap caption).
    charts = section(html, "charts")
    assert "<script" not in charts and f"s{ESCAPED}" in charts


def test_embedded_json_cannot_end_its_script_element():
    text = str(script_json({"a": "</script><!-- \u2028 & >"}))
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- \u2028 & >"}


def test_chart_escapes_labels():
    svg = str(tokens_chart({"<b>x</b>&": 10}))
    assert "<b>" not in svg
    assert "&lt;b&gt;x&lt;/b&gt;&amp;" in svg


def test_report_loads_no_external_resources(records):
    records[0] = rec(answer="See https://example.com/docs and <a href='http://evil'>x</a>")
    html = render_report(records)
    markup = DATA_BLOCK.sub("", html)  # answers are data there, never markup
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", markup, re.I)
    assert "url(" not in html and "@import" not in html and "<link" not in html
    assert "fetch(" not in html and "XMLHttpRequest" not in html


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


# -- charts --------------------------------------------------------------------------


def test_pareto_chart_marks_the_front_and_skips_without_items(records):
    svg = str(pareto_chart(strategy_table(results_frame(records))))
    # full 3/3 at 1,400 tokens; headtail 1/3 at 900; sliding 0/2 at 590: none beats another.
    assert svg.count('<g class="point front">') == 3
    assert "<polyline" in svg
    beaten = [*records, rec(strategy="wasteful", verdict="fail", cumulative_input_tokens=5000)]
    svg = str(pareto_chart(strategy_table(results_frame(beaten))))
    assert svg.count('<g class="point front">') == 3 and svg.count('<g class="point">') == 1
    assert "wasteful: pass rate 0% over 1 items, 5,000 input tokens" in svg
    assert 'id="chart-pareto"' not in render_report([])


def test_charts_without_their_data_leave_no_empty_frame(records):
    charts = section(render_report(records), "charts")
    assert 'id="chart-pareto"' in charts
    # The records carry no per-call series and no needle depths.
    assert "series-chart" not in charts and 'id="chart-depth"' not in charts


def test_prompt_token_series_per_scenario_with_full_in_ink():
    rs = [
        rec(session_prompt_tokens=[100, 220, 350], prompt_tokens=480),
        rec(strategy="sliding", session_prompt_tokens=[100, 180, 190], prompt_tokens=200),
        rec(scenario="short", session_prompt_tokens=[], prompt_tokens=50),
    ]
    charts = prompt_series_charts(records_frame(rs))
    assert [(c.scenario, c.calls) for c in charts] == [("needle", 4)]
    svg = str(charts[0].svg)
    assert svg.count("<polyline") == 2
    assert 'class="series full" stroke="#1c2126"' in svg
    assert "full: 480 tokens at the probe" in svg and "sliding: 200 tokens at the probe" in svg
    # One point per call, from the left edge of the plot to its right edge,
    # each line's the same calls.
    lines = re.findall(r'<polyline class="series[^"]*" stroke="[^"]*" points="([^"]*)"', svg)
    xs = [[point.split(",")[0] for point in line.split()] for line in lines]
    assert xs == [["58.0", "273.3", "488.7", "704.0"]] * 2
    html = render_report(rs)
    assert 'data-series="0"' in html and '<option value="0">needle (4 calls)</option>' in html


def test_needle_depth_heatmap_per_strategy():
    rs = [
        rec(scenario=f"grid-{d}-{t}", needle_depth=d, turns=t, verdict=v)
        for d, t, v in [(0.1, 20, "pass"), (0.1, 40, "fail"), (0.9, 20, "pass"), (0.9, 40, "pass")]
    ]
    svg = str(depth_heatmaps(records_frame(rs)))
    assert svg.count("<figure>") == 1 and "<figcaption>full</figcaption>" in svg
    assert "depth 10%, 40 messages: passed 0/1" in svg
    assert "depth 90%, 20 messages: passed 1/1" in svg
    assert str(depth_heatmaps(records_frame([rec()]))) == ""


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
    beyond = item(html, "needle", "sliding", "p1")
    assert beyond["no_ground_truth"].startswith("the full context (9,000 tokens) exceeds")
    (line,) = [x for x in summary_lines(records) if x.startswith("sliding")]
    assert "other 1" in line  # beyond_context is counted, not lost


def test_the_header_says_what_the_gate_decided_and_marks_regressions_apart(records):
    from pytest_ctxeval.gate.exitcodes import GateExit
    from pytest_ctxeval.gate.run import GateResult

    key = ("s.yaml", "needle", "headtail", "p2")
    comparison = Comparison(
        regressions=[Change(key, "ok", "context_loss", "the verdict fell: ok -> context_loss")],
        known_losses=[("s.yaml", "needle", "sliding", "p9")],
    )
    regressed = rec(
        scenario_file="s.yaml",
        strategy="headtail",
        probe="p2",
        verdict="fail",
        classification="context_loss",
    )
    known = rec(
        scenario_file="s.yaml",
        strategy="sliding",
        probe="p9",
        verdict="fail",
        classification="context_loss",
    )
    gate = GateResult(comparison, [], GateExit.REGRESSION, baseline_commit="abc1234")
    html = render_report([regressed, known], gate=gate)
    assert re.search(
        r'id="gate-decision">gate failed \(exit 1\): 1 regression; a probe regressed', html
    )
    assert "against the baseline of abc1234" in html
    # The matrix: the regressed pair stands out, the known loss does not.
    matrix = section(html, "matrix")
    assert matrix.count('class="cell context_loss regressed"') == 1
    assert "▼ 1 regressed" in matrix
    # The filter offers both marks; the drill-down says what the probe was.
    assert '<select id="f-gate"><option value="">all</option><option>regressed</option>' in html
    assert "<option>known loss</option>" in html
    rows = embedded_data(html)["rows"]["columns"]
    assert dict(zip(rows["probe"], rows["gate"], strict=True)) == {
        "p2": "regressed",
        "p9": "known loss",
    }
    lost = item(html, "needle", "headtail", "p2")
    assert lost["gate"] == "regressed"
    assert lost["gate_note"].startswith("was ok in the baseline of abc1234")
    assert item(html, "needle", "sliding", "p9")["gate"] == "known loss"
    # The counts are the gate's: one failure, the known loss xfailed.
    assert '<span class="outcome failed">1 failed</span>' in html
    passed = GateResult(Comparison(), [], GateExit.OK)
    assert 'id="gate-decision">gate passed: 0 regressions' in render_report([known], gate=passed)
    assert 'id="gate-decision"' not in render_report([known])


def test_cached_tokens_are_drawn_for_a_line_shorter_than_the_longest():
    # A strategy whose session made fewer calls than another's in the same
    # scenario: its cached-token dots follow its own calls.
    rs = [
        rec(
            session_prompt_tokens=[100, 220, 350],
            prompt_tokens=480,
            session_requests={"cached_tokens": [0, 100, 220]},
            probe_cached_tokens=350,
        ),
        rec(
            strategy="sliding",
            session_prompt_tokens=[100, 180],
            prompt_tokens=200,
            session_requests={"cached_tokens": [0, 100]},
            probe_cached_tokens=150,
        ),
    ]
    [chart] = prompt_series_charts(records_frame(rs))
    svg = str(chart.svg)
    dots = re.findall(r'<polyline class="series cached" [^>]*points="([^"]*)"', svg)
    assert [len(line.split()) for line in dots] == [3, 4]  # sliding's, then full's on top
    assert "sliding: cached tokens per call" in svg
    assert 'data-series="0"' in render_report(rs)


@pytest.mark.parametrize("log", [False, True])
def test_a_scale_places_many_values_as_it_places_each(log: bool) -> None:
    from pytest_ctxeval.report.svg import Scale

    scale = Scale(3.0, 91_000.0, 260.0, 14.0, log=log)
    values = [0, 1, 3, 17.5, 1_234, 90_999, 91_000, 120_000]
    assert scale.many(values) == [scale(v) for v in values]
    assert Scale(5.0, 5.0, 0.0, 100.0).many([5, 6]) == [0.0, 100.0]  # no span: no division by 0
