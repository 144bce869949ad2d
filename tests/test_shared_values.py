"""A run keeps what the records of one session repeat (its series, its fact
ledger, the fact states of probes that see the same window) once, not once
per record: read back from JSON, every record held its own copy."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from pytest_ctxeval.history.partial import PreviousResults
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.shared_values import SharedValues
from pytest_ctxeval.results.store import load_results


def record(probe: str, strategy: str = "full", **fields: object) -> ResultRecord:
    base = {"scenario": "s", "strategy": strategy, "model": "m", "verdict": "pass"}
    # Through JSON, as a worker's record reaches the controller.
    made = ResultRecord(**base, probe=probe, classification="ok", **fields)  # type: ignore[arg-type]
    return ResultRecord.model_validate_json(made.model_dump_json())


def test_equal_values_of_one_session_are_kept_once_and_other_values_stay_their_own() -> None:
    shared = SharedValues()
    series = {"session_prompt_tokens": [10, 20, 30], "fact_ledger": {"f": [["verbatim", 3]]}}
    first = record("a", **series, fact_survival={"f": "verbatim"})
    second = record("b", **series, fact_survival={"f": "gone"})
    third = record("c", **series, fact_survival={"f": "gone"})
    other = record("a", strategy="sliding", **series)
    for kept in (first, second, third, other):
        shared.share(kept)
    assert second.session_prompt_tokens is first.session_prompt_tokens
    assert second.fact_ledger is first.fact_ledger  # an extra field too
    assert third.fact_survival is second.fact_survival
    assert first.fact_survival == {"f": "verbatim"}  # a different value is its own
    assert second.fact_survival == {"f": "gone"}
    assert other.session_prompt_tokens is not first.session_prompt_tokens  # another session
    assert other.session_prompt_tokens == [10, 20, 30]


def test_the_earlier_records_a_partial_rerun_keeps_share_their_session_s_values(
    tmp_path: Path,
) -> None:
    """Read back from the earlier results file, the records a rerun keeps hold
    one copy of what their session repeats, as a run's own records do."""
    (tmp_path / "s.yaml").write_text(
        "id: s\nturns:\n  - user: hi\nprobes:\n"
        + "".join(f"  - {{id: {p}, user: q, expect: {{contains: x}}}}\n" for p in "abcd")
    )
    ledger = {"f": [["gone", 1], ["verbatim", 2]]}
    earlier = [
        record(p, scenario_file="s.yaml", fact_ledger=ledger, session_prompt_tokens=[5, 9])
        for p in "abcd"
    ]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in earlier))
    previous = PreviousResults()
    previous.read(results)
    rerun = record("a", scenario_file="s.yaml", fact_ledger=ledger)
    merged = previous.merged([rerun], model="m", repeat=1, root=tmp_path)
    assert [r.probe for r in merged] == ["a", "b", "c", "d"] and merged[0] is rerun
    kept = merged[1:]
    assert all(r.fact_ledger == ledger for r in kept)
    assert kept[1].fact_ledger is kept[0].fact_ledger is kept[2].fact_ledger
    assert kept[2].session_prompt_tokens is kept[0].session_prompt_tokens


def test_a_results_file_read_back_shares_its_session_s_values_and_leaves_the_collector_as_it_was(
    tmp_path: Path,
) -> None:
    ledger = {"f": [["gone", 1], ["verbatim", 2]]}
    written = [record(p, fact_ledger=ledger, session_prompt_tokens=[5, 9]) for p in "abc"]
    written.append(record("a", strategy="sliding", fact_ledger=ledger))
    results = tmp_path / "results.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in written))
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            read = load_results(results)
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
        assert [r.model_dump() for r in read] == [r.model_dump() for r in written]
        assert read[0].fact_ledger is read[1].fact_ledger is read[2].fact_ledger
        assert read[2].session_prompt_tokens is read[0].session_prompt_tokens
        assert read[3].fact_ledger is not read[0].fact_ledger  # another session
    results.write_text(written[0].model_dump_json() + "\nnot json\n")
    with pytest.raises(ValueError, match=r"results\.jsonl:2: not a result record"):
        load_results(results)
    assert gc.isenabled()
