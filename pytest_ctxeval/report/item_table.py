"""The item table's rows as columns of plain values, for the page's script.

The page draws the table from them one page at a time, filters, sorts and
searches them, and exports them as CSV: a run of thousands of items would
make thousands of table rows the browser lays out before it shows anything
(a LoCoMo-size run, 16,720 rows, took 10 s to open).  Each column is one
list, so a field's name is written once, not once per row.
"""

from __future__ import annotations

from typing import Any

from ..gate.baseline import Key, record_key
from ..results.record import ResultRecord
from .formats import MOCK_COST, percent, usd
from .origins import origin

# Every column, in the order of the lists; the page reads them by name.
COLUMNS = (
    "scenario",
    "strategy",
    "probe",
    "classification",
    "outcome",
    # Baseline mark ("regressed", ...) and what it means; "" without one.
    "gate",
    "gate_note",
    # "from run <id> (<date>)" for an item a partial rerun kept; else "".
    "from_run",
    # False for an item that errored before its window was built: it
    # measured nothing, and its figures read "not measured", not 0.
    "measured",
    "prompt",
    "saved",
    "saved_text",
    "cumulative",
    "cost",
    "cost_text",
    # The scenario's tags: an index into the table's ``tag_sets`` (a
    # scenario's items share one list).
    "tags",
    # What the search box looks in beyond the ids and tags: the node id, and
    # an index into ``search_texts`` (the answers, the error and the failed
    # checks; the strategies that gave one answer to a probe share it).
    "nodeid",
    "search",
)


def item_table(
    records: list[ResultRecord],
    outcomes: list[str],
    marks: dict[Key, tuple[str, str]],
    current_run: str,
    mock: bool,
) -> dict[str, Any]:
    """``columns`` (each a list, row N being ``records[N]``, the item the
    drill-down data holds at N), ``tag_sets`` and ``search_texts``."""
    table: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    tag_sets: dict[tuple[str, ...], int] = {}
    texts: dict[str, int] = {}
    for record, outcome in zip(records, outcomes, strict=True):
        full = record.full_prompt_tokens
        saved = 1 - record.prompt_tokens / full if full else None
        mark, note = marks.get(record_key(record), ("", ""))
        row = {
            "scenario": record.scenario,
            "strategy": record.strategy,
            "probe": record.probe,
            "classification": record.classification,
            "outcome": outcome,
            "gate": mark,
            "gate_note": note,
            "from_run": origin(record, current_run),
            "measured": not (record.classification == "error" and not record.prompt_tokens),
            "prompt": record.prompt_tokens,
            "saved": saved,
            "saved_text": percent(saved),
            "cumulative": record.cumulative_input_tokens,
            "cost": record.cost_usd,
            "cost_text": MOCK_COST if mock else usd(record.cost_usd),
            "tags": tag_sets.setdefault(tuple(record.tags), len(tag_sets)),
            "nodeid": record.nodeid,
            "search": texts.setdefault(_searched(record), len(texts)),
        }
        for name in COLUMNS:
            table[name].append(row[name])
    return {
        "columns": table,
        "tag_sets": [list(tags) for tags in tag_sets],
        "search_texts": list(texts),
    }


def _searched(record: ResultRecord) -> str:
    parts = [
        record.answer,
        record.ground_truth_answer,
        record.error,
        " ".join(record.failed_checks),
    ]
    return "\n".join(part for part in parts if part)
