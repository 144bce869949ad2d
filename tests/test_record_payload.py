"""An xdist worker sends each record less what its session's previous record
sent; the controller's records are whole all the same, however the workers'
reports interleave."""

from __future__ import annotations

from typing import Any

from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.record_payload import PayloadReceiver, PayloadSender

LEDGER = {"needle": [["verbatim", 3], ["gone", 2]]}
SERIES = {"prompt_tokens": [10, 20, 30], "cached_tokens": [0, 0, 0]}


def record(probe: str, **fields: Any) -> ResultRecord:
    values: dict[str, Any] = {
        "scenario_file": "scenarios/a.yaml",
        "scenario": "a",
        "strategy": "full",
        "model": "ctxeval/oracle",
        "probe": probe,
        "verdict": "pass",
        "classification": "ok",
        "fact_ledger": LEDGER,
        "session_requests": SERIES,
        "fact_survival": {"needle": "verbatim"},
    }
    return ResultRecord(**{**values, **fields})


def test_a_sessions_repeated_values_are_sent_once_and_put_back_whole() -> None:
    sender, receiver = PayloadSender(), PayloadReceiver()
    sent = [record(f"p{i}") for i in range(3)]
    payloads = [sender.payload(r) for r in sent]
    assert payloads[0][1] == []
    assert set(payloads[1][1]) == {"fact_ledger", "session_requests", "fact_survival"}
    assert "verbatim" not in payloads[2][0]  # left out, not sent again
    received = [receiver.record(payload, same, "gw0") for payload, same in payloads]
    assert [r.model_dump_json() for r in received] == [r.model_dump_json() for r in sent]


def test_a_changed_value_is_sent_and_later_records_get_the_new_one() -> None:
    sender, receiver = PayloadSender(), PayloadReceiver()
    moved = {"needle": "gone"}
    sent = [record("p0"), record("p1", fact_survival=moved), record("p2", fact_survival=moved)]
    received = [receiver.record(*sender.payload(r), "gw0") for r in sent]
    assert [r.fact_survival for r in received] == [{"needle": "verbatim"}, moved, moved]


def test_two_workers_sending_one_session_each_get_their_own_values_back() -> None:
    # --dist load can split a scenario's items between workers.
    first, second, receiver = PayloadSender(), PayloadSender(), PayloadReceiver()
    a = [record("p0"), record("p2")]
    b = [record("p1", fact_survival={"needle": "gone"}), record("p3", fact_survival={})]
    out = [
        receiver.record(*first.payload(a[0]), "gw0"),
        receiver.record(*second.payload(b[0]), "gw1"),
        receiver.record(*first.payload(a[1]), "gw0"),
        receiver.record(*second.payload(b[1]), "gw1"),
    ]
    assert [r.fact_survival for r in out] == [
        {"needle": "verbatim"},
        {"needle": "gone"},
        {"needle": "verbatim"},
        {},
    ]


def test_a_replacement_worker_sends_everything_again() -> None:
    receiver = PayloadReceiver()
    receiver.record(*PayloadSender().payload(record("p0")), "gw0")
    restarted = PayloadSender()  # a new process: it has sent nothing yet
    payload, same = restarted.payload(record("p1", fact_ledger={"needle": [["gone", 5]]}))
    assert same == []
    assert receiver.record(payload, same, "gw0").fact_ledger == {"needle": [["gone", 5]]}


def test_a_value_named_but_never_received_makes_the_record_an_error_not_a_crash() -> None:
    payload, _ = PayloadSender().payload(record("p0"))
    out = PayloadReceiver().record(payload, ["session_requests"], "gw0")
    assert out.error is not None and "session_requests" in out.error


def test_a_worker_freezes_what_it_keeps_alive_every_few_records_it_sends(tmp_path: Any) -> None:
    # As the controller freezes the records it keeps: the worker's live
    # sessions stay out of the collector's full passes (see kept_objects).
    import gc

    from conftest import plain_session

    from pytest_ctxeval.kept_objects import FREEZE_EVERY_RECORDS

    session = plain_session(tmp_path)
    gc.unfreeze()
    try:
        for n in range(FREEZE_EVERY_RECORDS - 1):
            payload, _ = session.payload(record(f"p{n}"))
            assert ResultRecord.model_validate_json(payload).probe == f"p{n}"
        assert gc.get_freeze_count() == 0
        session.payload(record("last"))
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
