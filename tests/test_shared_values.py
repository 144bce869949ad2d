"""A run keeps what the records of one session repeat (its series, its fact
ledger, the fact states of probes that see the same window) once, not once
per record: read back from JSON, every record held its own copy."""

from __future__ import annotations

from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.shared_values import SharedValues


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
