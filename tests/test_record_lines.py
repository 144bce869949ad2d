"""Reading a results file back parses a session's shared values once: the
records come out as a plain parse gives them, whatever the lines hold."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ctxeval.results import record_lines
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.record_lines import RECENT_SESSIONS, RecordLines
from pytest_ctxeval.results.store import load_results, write_results

LEDGER = {f"fact-{i}": [["verbatim", i], ["gone", i + 40]] for i in range(30)}
SERIES = {"prompt_tokens": list(range(0, 60_000, 70)), "cached_tokens": [0] * 858}


def record(scenario: str, strategy: str, probe: str, **fields: Any) -> ResultRecord:
    data: dict[str, Any] = {
        "scenario": scenario,
        "scenario_file": f"scenarios/{scenario}.yaml",
        "strategy": strategy,
        "model": "m",
        "probe": probe,
        "verdict": "pass",
        "classification": "ok",
        "answer": f"{scenario} {strategy} {probe}",
        "fact_ledger": LEDGER,
        "session_requests": SERIES,
        "session_prompt_tokens": SERIES["prompt_tokens"],
        "fact_survival": {"fact-1": "verbatim", "fact-2": "gone"},
    }
    data.update(fields)
    return ResultRecord.model_validate(data)


def interleaved() -> list[ResultRecord]:
    """Probes of two scenarios under three strategies, in turn (as xdist's two
    workers send them), with values that change within a session."""
    out = []
    for probe in range(6):
        for scenario in ("alpha", "beta"):
            for strategy in ("full", "sliding", "headtail"):
                changed: dict[str, Any] = {}
                if strategy == "sliding" and probe >= 3:  # the window lost a fact
                    changed["fact_survival"] = {"fact-1": "gone", "fact-2": "gone"}
                if scenario == "beta" and strategy == "headtail":
                    changed["fact_ledger"] = {**LEDGER, "beta-only": [["gone", 1]]}
                out.append(record(scenario, strategy, f"p{probe}", **changed))
    return out


def plain_parse(path: Path) -> list[dict[str, Any]]:
    return [
        ResultRecord.model_validate_json(line).model_dump()
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


def parsed_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the reader hands the JSON parser."""
    sizes: list[int] = []
    parse = ResultRecord.model_validate_json

    def measured(text: str | bytes, **kwargs: Any) -> ResultRecord:
        sizes.append(len(text))
        return parse(text, **kwargs)

    monkeypatch.setattr(record_lines.ResultRecord, "model_validate_json", measured)
    return sizes


def test_records_read_back_are_the_records_written_and_share_their_session_s_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.jsonl"
    write_results(path, interleaved())
    expected = plain_parse(path)
    sizes = parsed_sizes(monkeypatch)
    records = load_results(path)
    assert [r.model_dump() for r in records] == expected
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # The first two lines of each of the 6 sessions are parsed whole (a
    # value's text is held once it has come twice); the others once each,
    # without the text their session holds already.
    assert len(sizes) == len(lines) == 36
    assert sum(size == len(line) for size, line in zip(sizes, lines, strict=True)) == 12
    assert (
        max(size for size, line in zip(sizes, lines, strict=True) if size < len(line))
        < len(lines[0]) / 2
    )
    by_session: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in records:
        by_session.setdefault((r.scenario, r.strategy), []).append(r)
    for (_, strategy), session in by_session.items():
        assert all(r.fact_ledger is session[0].fact_ledger for r in session)
        if strategy == "sliding":
            assert session[2].fact_survival is not session[3].fact_survival
            assert session[3].fact_survival is session[5].fact_survival
    alpha, beta = by_session[("alpha", "full")], by_session[("beta", "full")]
    assert alpha[0].fact_ledger is not beta[0].fact_ledger  # each session its own


def test_a_nested_look_alike_or_another_format_is_read_whole(tmp_path: Path) -> None:
    # A value inside another field that reads like a shared field, and like
    # the session's scenario, ahead of the record's own: what the reader
    # would cut out is then not the record's field, and it reads the line whole.
    path = tmp_path / "results.jsonl"
    look_alike = {"a": 1, "fact_ledger": LEDGER, "scenario": "alpha", "strategy": "full", "z": 0}
    written = [
        record("alpha", "full", "p0"),
        record("alpha", "full", "p0b"),  # the ledger came twice: its text is held
        record("alpha", "full", "p1", aaa_note=look_alike),
        record("alpha", "full", "p2", aaa_note=look_alike, fact_ledger={}),
        record("alpha", "full", "p3"),
        # Another session's record whose own value names this session first.
        record(
            "alpha",
            "sliding",
            "p0",
            aaa_note={"a": 1, "scenario": "alpha", "strategy": "full", "z": 0},
        ),
    ]
    write_results(path, written)
    # And a line as pydantic writes it (no spaces, keys as declared).
    with path.open("a", encoding="utf-8") as out:
        out.write(record("alpha", "full", "p4").model_dump_json() + "\n")
    records = load_results(path)
    assert [r.model_dump() for r in records] == plain_parse(path)
    assert records[2].aaa_note == look_alike
    assert not getattr(records[3], "fact_ledger", None)
    assert records[4].fact_ledger is records[0].fact_ledger
    assert records[5].strategy == "sliding"
    assert records[5].fact_ledger is not records[0].fact_ledger  # each session its own


def test_a_session_whose_lines_come_back_after_many_others_is_still_read_right() -> None:
    reader = RecordLines()
    sessions = [f"s{i}" for i in range(RECENT_SESSIONS + 5)]
    from pytest_ctxeval.results.record_text import record_dumps
    from pytest_ctxeval.results.store import record_data

    def line(r: ResultRecord) -> str:
        return record_dumps(record_data(r))

    written = [record(s, "full", p) for p in ("p0", "p1") for s in sessions]
    read = [reader.record(line(r)) for r in written]
    assert [r.model_dump() for r in read] == [
        json.loads(json.dumps(r.model_dump())) for r in written
    ]


@pytest.mark.parametrize(
    ("damage", "line"),
    [
        (lambda packed: packed[: len(packed) // 2], r"\d+"),  # cut short
        (lambda packed: packed[:3] + b"\xff" * 40, "1"),  # not gzip past its first bytes
    ],
    ids=["cut-short", "damaged"],
)
def test_a_damaged_compressed_results_file_is_one_clear_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[bytes], bytes],
    line: str,
) -> None:
    from pytest_ctxeval.cli import main

    plain = tmp_path / "results.jsonl"
    write_results(plain, interleaved())
    packed = tmp_path / "results.jsonl.gz"
    packed.write_bytes(damage(gzip.compress(plain.read_bytes())))
    with pytest.raises(ValueError, match=rf"results\.jsonl\.gz:{line}: expected gzip-compressed"):
        load_results(packed)
    assert main(["report", str(packed), "-o", str(tmp_path / "report.html")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results.jsonl.gz:" in err and "Traceback" not in err
