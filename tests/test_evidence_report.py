"""Evidence survival per strategy in the terminal summary, the Markdown
summary and the HTML report."""

from __future__ import annotations

from typing import Any

from pytest_ctxeval.report.evidence import evidence_survival
from pytest_ctxeval.report.html import render_report
from pytest_ctxeval.report.markdown import markdown_summary
from pytest_ctxeval.report.terminal import summary_lines
from pytest_ctxeval.results.record import ResultRecord


def record(strategy: str, probe: str, **survival: str) -> ResultRecord:
    """A record whose probe cites every ``evidence_…`` fact it is given."""
    facts = {k.replace("_", "-"): v for k, v in survival.items()}
    fields: dict[str, Any] = {
        "scenario": "conv-7",
        "strategy": strategy,
        "model": "ctxeval/oracle",
        "probe": probe,
        "verdict": "pass",
        "classification": "ok",
        "fact_survival": facts,
        "evidence": [f for f in facts if f.startswith("evidence-")],
    }
    return ResultRecord(**fields)


RECORDS = [
    record("full", "qa-1", evidence_d1_1="verbatim", evidence_d2_1="verbatim", pin="verbatim"),
    record("full", "qa-2", evidence_d1_1="verbatim", evidence_d2_1="verbatim", pin="verbatim"),
    record("sliding", "qa-1", evidence_d1_1="gone", evidence_d2_1="verbatim", pin="gone"),
    record("sliding", "qa-2", evidence_d1_1="gone", evidence_d2_1="transformed", pin="gone"),
    record("headtail", "qa-1", evidence_d1_1="in_store", evidence_d2_1="verbatim"),
]


def test_counts_only_evidence_facts_per_strategy() -> None:
    rows = {r.strategy: r for r in evidence_survival(RECORDS)}
    assert list(rows) == ["full", "headtail", "sliding"]
    assert rows["full"].counts == {"verbatim": 4, "transformed": 0, "in_store": 0, "gone": 0}
    # "pin" is a needle but not evidence: it is not counted.
    assert rows["sliding"].counts == {"verbatim": 1, "transformed": 1, "in_store": 0, "gone": 2}
    assert rows["sliding"].share("gone") == 0.5
    assert rows["headtail"].total == 2


def test_terminal_summary_shows_evidence_survival() -> None:
    lines = summary_lines(RECORDS)
    at = lines.index("evidence survival (the evidence each probe cites):")
    assert lines[at + 1 :] == [
        "full      verbatim 100%  transformed   0%  in_store   0%  gone   0%  (n=4)",
        "headtail  verbatim  50%  transformed   0%  in_store  50%  gone   0%  (n=2)",
        "sliding   verbatim  25%  transformed  25%  in_store   0%  gone  50%  (n=4)",
    ]


def test_markdown_summary_has_an_evidence_table() -> None:
    text = markdown_summary(RECORDS)
    assert "### Evidence survival" in text
    assert "| sliding | 1 (25%) | 1 (25%) | 0 (0%) | 2 (50%) | 4 |" in text


def test_html_report_has_an_evidence_section() -> None:
    html = render_report(RECORDS)
    assert '<section id="evidence">' in html
    section = html.split('<section id="evidence">', 1)[1].split("</section>", 1)[0]
    assert "sliding" in section and "2 (50.0 %)" in section


def test_no_evidence_facts_no_evidence_section() -> None:
    plain = [record("full", "qa-1", pin="verbatim")]
    assert evidence_survival(plain) == []
    assert not any("evidence" in line for line in summary_lines(plain))
    assert "Evidence survival" not in markdown_summary(plain)
    assert '<section id="evidence">' not in render_report(plain)


def test_a_probe_counts_only_the_evidence_it_cites() -> None:
    cited = record("sliding", "qa-1", evidence_d1_1="gone", evidence_d2_1="verbatim")
    cited.evidence = ["evidence-d2-1"]
    # An adversarial question cites nothing: it counts nothing.
    adversarial = record("sliding", "qa-9", evidence_d1_1="gone", evidence_d2_1="verbatim")
    adversarial.evidence = []
    (row,) = evidence_survival([cited, adversarial])
    # qa-1 cites only D2:1; the lost D1:1 answers another question.
    assert row.counts == {"verbatim": 1, "transformed": 0, "in_store": 0, "gone": 0}


def test_records_name_their_probe_evidence(ctx: Any) -> None:
    ctx.write(
        "scenarios/conv.yaml",
        """
id: conv
turns:
  - user: hello
  - assistant: hi
  - user: ''
  - assistant: ok
needles:
  - {id: evidence-d1-2, text: 'I moved to Lisbon.', turn: 3, answer: Lisbon}
  - {id: evidence-d1-9, text: 'My cat is called Tom.', turn: 1, answer: Tom}
probes:
  - {id: qa-1, user: "Where did I move?", evidence: [evidence-d1-2], expect: {f1: Lisbon}}
""",
    )
    ctx.run("--ctx-strategy=full").assert_outcomes(passed=1)
    (result,) = ctx.results()
    assert result["evidence"] == ["evidence-d1-2"]
    assert result["classification"] == "ok"
