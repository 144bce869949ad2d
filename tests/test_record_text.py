"""A record's line writes the values a session's records share once, and is
still exactly ``json.dumps(..., sort_keys=True, ensure_ascii=False)`` with
every secret scrubbed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_ctxeval import redact
from pytest_ctxeval.redact import register_secret
from pytest_ctxeval.results import record_text
from pytest_ctxeval.results.record import ResultRecord
from pytest_ctxeval.results.record_text import record_dumps
from pytest_ctxeval.results.store import record_json

FIELDS = {"scenario": "s", "strategy": "full", "model": "m", "probe": "p", "verdict": "pass"}


def plain(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize(
    "data",
    [
        {"answer": "é", "fact_survival": {"b": "gone", "a": "verbatim"}, "zeta": [1, 2.0]},
        {"cache_breaks": [], "fact_ledger": {}, "session_requests": {"p": [1]}},
        {"session_prompt_tokens": [3, 4], "compaction_requests": [2], "cache_breaks": [{}]},
        {"aa": None, "fact_ledger": {"f": [["verbatim", 2]]}, "zz": {"k": True}},
        {},
    ],
)
def test_a_line_is_json_dumps_with_sorted_keys(data: dict[str, Any]) -> None:
    assert record_dumps(data) == plain(data)
    assert record_dumps(data) == plain(data)  # the second time from the kept texts


def test_a_shared_value_is_written_once_and_a_new_one_never_gets_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written: list[Any] = []
    counting = record_text.TextsByIdentity(lambda value: written.append(value) or plain(value))
    monkeypatch.setattr(record_text, "_shared_texts", counting)
    series = {"prompt_tokens": list(range(300))}
    for probe in range(5):
        data = {"probe": f"p{probe}", "session_requests": series}
        assert record_dumps(data) == plain(data)
    assert written.count(series) == 1  # the session's series, written for the first record only
    changed = {"prompt_tokens": [*range(300), 301]}
    assert record_dumps({"session_requests": changed}) == plain({"session_requests": changed})


def test_a_secret_in_a_shared_value_is_scrubbed_though_its_text_was_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redact, "_explicit", set())  # the secret is this test's alone
    value = "vault-shared-" + "9" * 24
    ledger = {"needle": [[f"verbatim {value}", 3]]}
    first = ResultRecord(**FIELDS, classification="ok", fact_ledger=ledger)
    assert value in record_json(first)  # not a secret yet
    register_secret(value)
    second = ResultRecord(**FIELDS, classification="ok", fact_ledger=ledger)
    line = record_json(second)
    assert value not in line
    assert json.loads(line)["fact_ledger"]["needle"][0][1] == 3


def test_with_no_secret_known_sealing_does_not_write_the_record_to_look_for_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redact, "_known_secrets", lambda scenario=True: frozenset())

    def never(value: Any) -> str:
        raise AssertionError("written out with nothing to look for")

    assert not redact.needs_scrub({"answer": "anything"}, encode=never)


def test_the_junit_fact_survival_property_names_the_facts_the_probe_is_about() -> None:
    from pytest_ctxeval.collect import junit_properties

    survival = {"a": "verbatim", "b": "gone", "c": "in_store", "d": "transformed"}
    cases = [
        ({"needle": "a"}, "a=verbatim"),
        ({"constraint": "c", "evidence": ["d", "b", "missing"]}, "b=gone,c=in_store,d=transformed"),
        ({}, ""),
    ]
    for about, expected in cases:
        record = ResultRecord(**FIELDS, classification="ok", fact_survival=survival, **about)
        assert dict(junit_properties(record))["ctxeval.fact_survival"] == expected
