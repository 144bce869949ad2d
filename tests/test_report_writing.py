"""How the report carries a large run: the drill-downs packed a chunk of
items at a time, row N of the table being item N of the drill-downs, and
the writing itself (word diffs computed once per pair of answers, Python's
cycle collector paused)."""

from __future__ import annotations

import gc
import re
from typing import Any

import pytest
from many_items import ITEMS, PROBES, SCENARIOS, many_records

from pytest_ctxeval.report import drilldown, html
from pytest_ctxeval.report.page_data import (
    CHUNK_ITEMS,
    drilldown_chunks,
    pack,
    read_page_data,
    unpack,
    unpacked_text,
)
from pytest_ctxeval.results.record import ResultRecord


@pytest.fixture(scope="module")
def records() -> list[ResultRecord]:
    return many_records()


def test_a_chunk_packs_to_base64_and_back_unchanged() -> None:
    payload = {"texts": ["</script><!-- & \u2028 café", "x" * 5_000], "rate": float("nan")}
    packed = pack(payload)
    assert re.fullmatch(r"[A-Za-z0-9+/]+=*", packed)  # nothing an HTML parser reads
    assert len(packed) < 1_000  # 5,000 x-es pack small
    assert unpack(packed) == {"texts": payload["texts"], "rate": None}
    assert pack(payload) == packed  # the same data, the same bytes


def test_a_text_only_in_a_drilldown_is_found_once_unpacked(records: list[ResultRecord]) -> None:
    # What the secret and redaction tests read: a plain search of the file
    # would miss a window's text, packed away.
    html_text = html.render_report(records[:3])
    window = "window of conv-0/full/qa-01"
    assert window not in html_text
    assert window in unpacked_text(html_text)


def test_row_n_of_the_table_is_item_n_of_the_packed_chunks(records: list[ResultRecord]) -> None:
    data = read_page_data(html.render_report(records))
    assert len(data["details"]) == -(-ITEMS // CHUNK_ITEMS) == 3
    rows = data["rows"]["columns"]
    for n in (0, CHUNK_ITEMS - 1, CHUNK_ITEMS, ITEMS - 1):
        chunk = data["details"][n // CHUNK_ITEMS]
        it = chunk["items"][n % CHUNK_ITEMS]
        key = (rows["scenario"][n], rows["strategy"][n], rows["probe"][n])
        assert (it["scenario"], it["strategy"], it["probe"]) == key
        # Its references point into its own chunk's tables.
        assert chunk["texts"][it["answer"]] == "answer of {}/{}/{}".format(*key)
        assert list(chunk["facts"][it["facts"]]) == [f"fact-{key[0]}-{key[2]}"]


def test_answers_given_alike_are_diffed_once(
    records: list[ResultRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str | None, str | None]] = []
    real = drilldown.word_diff

    def counted(before: str | None, after: str | None) -> list[list[str]] | None:
        calls.append((before, after))
        return real(before, after)

    monkeypatch.setattr(drilldown, "word_diff", counted)
    alike = [r.model_copy(update={"answer": "I do not know."}) for r in records]
    chunks = drilldown_chunks(alike, ["failed"] * len(alike), [None] * len(alike))
    # One diff per probe's full-context answer, whatever the strategy or chunk.
    assert len(calls) == len(set(calls)) == len(SCENARIOS) * len(PROBES)
    last = chunks[-1]["items"][-1]
    assert last["diff"] == real(alike[-1].ground_truth_answer, "I do not know.")


def test_the_cycle_collector_is_paused_while_the_report_is_built_and_then_restored(
    records: list[ResultRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = html.item_table

    def spy(*args: Any, **kw: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return real(*args, **kw)

    monkeypatch.setattr(html, "item_table", spy)
    assert gc.isenabled()
    html.render_report(records[:3])
    assert seen == [False] and gc.isenabled()
    # Off before: off after, and an error inside still restores it.
    gc.disable()
    try:
        html.render_report(records[:3])
        assert not gc.isenabled()
    finally:
        gc.enable()
    monkeypatch.setattr(html, "item_table", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        html.render_report(records[:3])
    assert gc.isenabled()
