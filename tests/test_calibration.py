"""Calibration: a probe whose expectation a decoy that knows nothing meets is
``uncheckable``: never ok, never a loss, the decoy named, counted, warned of."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import CtxProject, summary_line

from pytest_ctxeval.cli import main
from pytest_ctxeval.evaluate.calibration import decoy_pass
from pytest_ctxeval.report.outcomes import pytest_outcome
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.scenario.build import Conversation
from pytest_ctxeval.scenario.loader import parse_conversations

SESSIONS = """
id: diary
sessions:
  - turns:
      - user: (session 1, 10:37 am on 27 June, 2023)
      - user: "Ana: I ran a charity race for mental health last Sunday."
      - assistant: "Ben: The weather was lovely for it."
      - user: "Ana: The long race along the river was tiring but fun."
  - turns:
      - user: (session 2, 4:04 pm on 3 July, 2023)
      - user: "Ana: We adopted a puppy named Oliver."
      - assistant: "Ben: Lovely, I hope he settles in."
      - user: ""
needles:
  - {id: pup, text: "Ana: Our puppy sleeps in a basket by the stove.", turn: 8}
probes:
{probes}
"""


def conversation(*probes: str) -> Conversation:
    body = "\n".join(f"  - {p}" for p in probes)
    (built,) = parse_conversations(SESSIONS.replace("{probes}", body), "diary.yaml")
    return built


def passing_decoy(probe: str) -> tuple[str, str] | None:
    built = conversation(probe)
    found = decoy_pass(built, built.probes[0])
    return None if found is None else (found.decoy.kind, found.decoy.text)


@pytest.mark.parametrize(
    ("probe", "kind"),
    [
        # Only a ban: an abstention bans nothing, after the strategy lost everything.
        ('{id: p, user: "Did Ana adopt a kitten?", expect: {not_contains: kitten}}', "abstention"),
        ('{id: p, user: "Did Ana adopt a cat?", expect: {not_regex: "kitten|cat"}}', "abstention"),
        # "Does not abstain": the question itself does not.
        ('{id: p, user: "What did Ana adopt?", expect: {abstains: false}}', "question"),
        # A year follows an abstention; a month is in a session header.
        ('{id: p, user: "When did Ana adopt?", expect: {regex: "20[0-9][0-9]"}}', "abstention"),
        ('{id: p, user: "When did Ana adopt?", expect: {regex: "June|July"}}', "session header"),
        # One content word of the gold answer, said elsewhere, meets f1 >= 0.5.
        ('{id: p, user: "What did Ana run?", expect: {f1: "charity race"}}', "session sentence"),
    ],
)
def test_a_probe_a_knowledge_free_decoy_passes_is_uncheckable(probe: str, kind: str) -> None:
    found = passing_decoy(probe)
    assert found is not None and found[0] == kind


@pytest.mark.parametrize(
    "probe",
    [
        '{id: p, user: "What did Ana adopt?", expect: {contains: Oliver}}',
        '{id: p, user: "What did Ana adopt?", expect: {f1: "named Oliver"}}',
        # An abstention is the right answer about something never said: not its decoy.
        '{id: p, user: "What instrument does the puppy play?", expect: {abstains: true}}',
        '{id: p, user: "Where does the puppy sleep?", needle: pup, expect: {contains: basket}}',
        # No expectation: scored against the full-context answer, nothing to calibrate.
        '{id: p, user: "How is Ana?"}',
    ],
)
def test_a_probe_only_the_session_can_answer_is_checkable(probe: str) -> None:
    assert passing_decoy(probe) is None


def test_a_date_line_that_states_the_answer_is_no_decoy() -> None:
    text = """
    id: deploy
    turns:
      - user: "Deploy on 5 May at 10:00."
      - assistant: Noted.
    probes:
      - {id: when, user: "When do we deploy?", expect: {contains: "5 May"}}
      - {id: month, user: "Which month do we deploy in?", expect: {regex: "May|June"}}
    """
    (built,) = parse_conversations(textwrap.dedent(text), "deploy.yaml")
    assert [decoy_pass(built, p) for p in built.probes] == [None, None]


def test_the_evidence_of_a_probe_is_never_its_decoy() -> None:
    # The needle's sentence states "stove" but is the evidence: it is not sampled.
    probe = '{id: p, user: "Where is the basket?", needle: pup, expect: {f1: "by the stove"}}'
    assert passing_decoy(probe) is None


UNCHECKABLE = """
id: bans
turns:
  - user: The staging database listens on port 5433.
  - assistant: Noted.
probes:
  - {id: ban, user: "Should I use requests for HTTP?", expect: {not_contains: requests}}
  - {id: port, user: "Which port does staging use?", expect: {contains: "5433"}}
"""


def test_an_uncheckable_probe_is_skipped_naming_the_decoy_and_counted(
    ctx: CtxProject, xdist_args: tuple[str, ...]
) -> None:
    ctx.scenario("bans", UNCHECKABLE)
    result = ctx.run("--ctx-strategy=full,sliding", "-rs", *xdist_args)
    result.assert_outcomes(passed=2, skipped=2)
    records = {(r["strategy"], r["probe"]): r for r in ctx.results()}
    ban = records[("full", "ban")]
    assert (ban["classification"], ban["verdict"]) == ("uncheckable", "error")
    assert ban["decoy"] == {
        "kind": "abstention",
        "text": "I could not find that in our conversation.",
    }
    # Not asked: no answer, no ground truth, no model call.
    assert (ban["answer"], ban["ground_truth_answer"], ban["llm_calls"]) == (None, None, 0)
    assert records[("full", "port")]["decoy"] is None
    result.stdout.fnmatch_lines(
        ["*SKIPPED*uncheckable: the abstention 'I could not find that in our conversation.'*"]
    )
    assert "uncheckable 1" in summary_line(result, "full")
    html = (ctx.path / "reports/ctxeval.html").read_text(encoding="utf-8")
    # The strategy table's count, linking to the items; the matrix cell names it.
    assert html.count('classification=uncheckable">1</a>') == 2
    assert html.count("uncheckable 1/2</a>") == 2


def test_the_report_counts_an_uncheckable_item_as_pytest_did() -> None:
    record = ResultRecord(
        scenario="s",
        strategy="full",
        model="ctxeval/oracle",
        probe="p",
        verdict="error",
        classification="uncheckable",
        decoy={"kind": "question", "text": "q"},
    )
    assert pytest_outcome(record) == "skipped"
    assert pytest_outcome(record, "fail") == "skipped"


def test_validate_warns_at_each_uncheckable_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bans.yaml"
    path.write_text(textwrap.dedent(UNCHECKABLE).lstrip(), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}: ok (1 scenario, 1 warning)\n"
    assert err == (
        f"{path}:6:5: warning: probe 'ban' of 'bans' is uncheckable: the abstention "
        "'I could not find that in our conversation.' meets its expectation, though it "
        "knows nothing of the session; expect something only an answer from the session "
        "can say\n"
    )


def test_a_log_line_is_no_timestamp_but_a_bare_date_line_is():
    # Long logs are read word by word before the date regexes run: a line
    # with more than a few other words is never a timestamp, a date line is.
    from pytest_ctxeval.evaluate.calibration import _is_timestamp

    assert not _is_timestamp("2026-11-30T12:00:00Z INFO worker[512]: deploy cluster queue index")
    assert _is_timestamp("2026-11-30 12:00:00 UTC")
    assert _is_timestamp("(session 4, 10:37 am on 27 June, 2023)")
    assert _is_timestamp("On Monday 12th June at 10:00 UTC")
    assert not _is_timestamp("On Monday 12th June the deploy moved to staging")


@pytest.mark.parametrize("count", [33, 1_000, 20_000])
def test_session_sentences_are_drawn_in_the_seeded_sample_order(count: int) -> None:
    # The decoy sentences of a probe are a seeded sample: drawn one at a time
    # (a long session has tens of thousands), in the order random.sample gives,
    # so a suite's decoys stay what they were.
    import itertools
    import random

    from pytest_ctxeval.evaluate.calibration import seeded_order

    drawn = random.Random("diary\0p")
    first = list(itertools.islice(seeded_order(drawn, count), 40))
    assert first == random.Random("diary\0p").sample(range(count), count)[:40]
    everything = random.Random("diary\0p")
    assert list(seeded_order(everything, count)) == random.Random("diary\0p").sample(
        range(count), count
    )


@pytest.mark.parametrize("days", [5, 60], ids=["all-kept", "sampled"])
def test_date_lines_repeated_in_tool_outputs_are_the_headers_found_line_by_line(days: int) -> None:
    # Each distinct short line is looked at once; the headers (and the seeded
    # sample of them past MAX_HEADERS) are the ones found occurrence by occurrence.
    import json
    import random

    from pytest_ctxeval.evaluate.calibration import HEADER_CHARS, _is_timestamp, session_headers
    from pytest_ctxeval.llm.request_text import message_texts

    rng = random.Random(4)
    turns = []
    for turn in range(40):
        rows = [f"{rng.randrange(1, days + 1)} June 2023" for _ in range(6)]
        rows += [
            '"status": "ok",',
            "{",
            f"  {turn % 3}:{turn % 7:02d} pm  ",
            "deploy cluster queue",
        ]
        rng.shuffle(rows)
        turns += [{"user": f"Turn {turn}."}, {"assistant": "\n".join(rows)}]
    yaml_text = json.dumps({"id": "logs", "turns": turns, "probes": [{"id": "p", "user": "When?"}]})
    (built,) = parse_conversations(yaml_text, "logs.yaml")

    by_occurrence = [
        line.strip()
        for message in built.messages
        for text in message_texts(message)
        for line in text.splitlines()
        if line.strip() and len(line.strip()) <= HEADER_CHARS and _is_timestamp(line.strip())
    ]
    distinct = list(dict.fromkeys(by_occurrence))
    assert len(by_occurrence) > len(distinct) >= min(days, 32)  # repeats, and many of them
    if len(distinct) > 32:
        picked = sorted(random.Random("logs\0headers").sample(range(len(distinct)), 32))
        distinct = [distinct[i] for i in picked]
    assert session_headers(built) == [(line, False) for line in distinct]
