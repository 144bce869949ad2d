"""The data the report's page carries: the item table's rows as plain JSON,
and each item's drill-down packed, a chunk of items at a time.

A LoCoMo-size run's drill-downs are 33 MB of JSON: Chromium takes 0.8 s
only to read past them in the page, and 0.3 s more to parse them.  Packed
with gzip, as base64, they are 1.8 MB: the page unpacks a chunk (the
browser's DecompressionStream) only when an item of it is opened, so an
opened item waits for its own chunk, never for the whole run.  The rows stay
unpacked: the table, its filters, sorting, search and CSV export need all of
them at once, as soon as the page is shown.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator
from typing import Any

from markupsafe import Markup

from ..results.record import ResultRecord
from .drilldown import DrilldownData, plain_json, script_json

# Items per packed chunk: small enough that one decodes at a click (about
# 0.5 MB of JSON for imported conversations), large enough that the texts and
# fact tables the probes of one session share are stored once per chunk.
CHUNK_ITEMS = 256
# On a LoCoMo-size run's drill-downs: 8 % larger than level 9 in half its
# time, a third smaller than level 1.
LEVEL = 6

_BLOCK = re.compile(r'<script type="application/json" id="ctx-data">(.*?)</script>', re.S)


def drilldown_chunks(
    records: list[ResultRecord],
    outcomes: list[str],
    gates: list[tuple[str, str] | None],
    size: int = CHUNK_ITEMS,
) -> list[dict[str, Any]]:
    """The drill-down data of ``records``, ``size`` items a chunk, each chunk
    with its own texts, windows and fact tables (see ``DrilldownData``)."""
    chunks = []
    diffs: dict[tuple[str | None, str | None], list[list[str]] | None] = {}
    for start in range(0, len(records), size):
        data = DrilldownData(diffs=diffs)
        end = start + size
        for record, outcome, gate in zip(
            records[start:end], outcomes[start:end], gates[start:end], strict=True
        ):
            data.add(record, outcome, gate)
        chunks.append(data.payload())
    return chunks


def pack(payload: Any) -> str:
    """``payload`` as gzip'd JSON in base64: ASCII letters, digits, + / and =,
    nothing an HTML parser reads as markup."""
    raw = plain_json(payload).encode("utf-8")
    # mtime=0: the same data packs to the same bytes.
    return base64.b64encode(gzip.compress(raw, compresslevel=LEVEL, mtime=0)).decode("ascii")


def unpack(packed: str) -> Any:
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def page_data(rows: dict[str, list[Any]], chunks: list[dict[str, Any]]) -> Markup:
    """The page's one data block: ``rows`` as JSON, the chunks packed."""
    return script_json({"rows": rows, "chunk": CHUNK_ITEMS, "details": [pack(c) for c in chunks]})


def read_page_data(html: str) -> dict[str, Any]:
    """The data block of a report, chunks unpacked: ``rows`` (columns),
    ``chunk`` (items per chunk) and ``details`` (each chunk's texts,
    windows, facts and items)."""
    found = _BLOCK.search(html)
    if found is None:
        raise ValueError("not a pytest-ctxeval report: no data block")
    data: dict[str, Any] = json.loads(found.group(1))
    data["details"] = [unpack(chunk) for chunk in data["details"]]
    return data


def unpacked_text(html: str) -> str:
    """The report's HTML followed by its drill-downs unpacked, as JSON: all
    the page can show, for a check that a text is nowhere in it (a packed
    chunk hides its texts from a plain search of the file)."""
    details = read_page_data(html)["details"]
    return html + "\n" + json.dumps(details, ensure_ascii=False)


def drilldown_items(data: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Each item's drill-down in row order, with the chunk its references
    (texts, windows, facts) point into."""
    for chunk in data["details"]:
        for item in chunk["items"]:
            yield item, chunk
