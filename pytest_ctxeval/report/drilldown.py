"""The data behind each item's drill-down, embedded in the report as JSON
(packed a chunk of items at a time, see ``page_data``).

The report's script draws the drill-down from it: the window the strategy
sent (each part marked), the memory it fetched, both answers with a word-level
diff, fact survival, tokens and cost.  Sizes stay small: every distinct text
is stored once per chunk (a kept message appears in every strategy's window)
and every distinct window once (the probes of one session share theirs).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from ..results.record import ResultRecord
from ..show_command import show_command
from ..textcap import cap_text
from .rollout_view import rollout_view

# Answers are diffed word by word; past this many characters, only their start.
DIFF_CHARS = 4_000
# A word or a punctuation mark with the spaces before it: a bare space never
# matches on its own, so unrelated answers do not interleave word by word.
_WORDS = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")
# Characters that could end the <script> element or confuse an HTML parser
# in embedded JSON; JSON reads the escapes back as the same characters.
_UNSAFE_IN_SCRIPT = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def word_diff(before: str | None, after: str | None) -> list[list[str]] | None:
    """``before`` → ``after`` as ``[op, text]`` runs, op ``=``, ``-`` or ``+``;
    None when either is missing or they are equal."""
    if before is None or after is None or before == after:
        return None
    old = _WORDS.findall(cap_text(before, DIFF_CHARS))
    new = _WORDS.findall(cap_text(after, DIFF_CHARS))
    ops: list[list[str]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _append(ops, "=", "".join(old[i1:i2]))
            continue
        if i2 > i1:
            _append(ops, "-", "".join(old[i1:i2]))
        if j2 > j1:
            _append(ops, "+", "".join(new[j1:j2]))
    return ops


def _append(ops: list[list[str]], op: str, text: str) -> None:
    if ops and ops[-1][0] == op:
        ops[-1][1] += text
    else:
        ops.append([op, text])


@dataclass
class DrilldownData:
    """Texts, windows, fact-survival tables and items, each stored once,
    referenced by index: the probes of one session mostly share their
    window's parts and their facts' states (an imported conversation has
    hundreds of probes and hundreds of facts)."""

    texts: list[str] = field(default_factory=list)
    windows: list[list[dict[str, Any]]] = field(default_factory=list)
    facts: list[dict[str, str]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    _text_ids: dict[str, int] = field(default_factory=dict)
    _window_ids: dict[str, int] = field(default_factory=dict)
    _fact_ids: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)
    # Word diffs by (full-context answer, answer), shared by the chunks of one
    # report: strategies that give one answer to a probe diff it once.
    diffs: dict[tuple[str | None, str | None], list[list[str]] | None] = field(default_factory=dict)

    def text(self, value: str | None) -> int | None:
        if value is None:
            return None
        if value not in self._text_ids:
            self._text_ids[value] = len(self.texts)
            self.texts.append(value)
        return self._text_ids[value]

    def window(self, parts: list[dict[str, Any]]) -> int | None:
        if not parts:
            return None
        stored = [
            {**part, "text": self.text(part["text"])} if "text" in part else dict(part)
            for part in parts
        ]
        digest = hashlib.sha1(
            json.dumps(stored, sort_keys=True).encode("utf-8"), usedforsecurity=False
        ).hexdigest()
        if digest not in self._window_ids:
            self._window_ids[digest] = len(self.windows)
            self.windows.append(stored)
        return self._window_ids[digest]

    def fact_states(self, states: Mapping[str, str]) -> int | None:
        if not states:
            return None
        key = tuple(sorted(states.items()))
        if key not in self._fact_ids:
            self._fact_ids[key] = len(self.facts)
            self.facts.append(dict(key))
        return self._fact_ids[key]

    def diff(self, before: str | None, after: str | None) -> list[list[str]] | None:
        key = (before, after)
        if key not in self.diffs:
            self.diffs[key] = word_diff(before, after)
        return self.diffs[key]

    def add(self, record: ResultRecord, outcome: str, gate: tuple[str, str] | None = None) -> None:
        """``gate``: how the item stands against the baseline (mark, note)."""
        item = item_data(self, record, outcome)
        if gate is not None:
            item["gate"], item["gate_note"] = gate
        self.items.append(item)

    def payload(self) -> dict[str, Any]:
        return {
            "texts": self.texts,
            "windows": self.windows,
            "facts": self.facts,
            "items": self.items,
        }


def item_data(data: DrilldownData, record: ResultRecord, outcome: str) -> dict[str, Any]:
    """One item's drill-down; texts and the window by reference into ``data``."""
    item = _item_data(data, record, outcome)
    rollout = rollout_view(record)
    if rollout is not None:  # only rollout items carry it
        item["rollout"] = rollout
    return item


def _item_data(data: DrilldownData, record: ResultRecord, outcome: str) -> dict[str, Any]:
    return {
        "nodeid": record.nodeid,
        "scenario": record.scenario,
        "strategy": record.strategy,
        "probe": record.probe,
        "classification": record.classification,
        "outcome": outcome,
        "verdict": record.verdict,
        "truth_verdict": record.ground_truth_verdict,
        "repeat": record.repeat,
        "pass_rate": record.pass_rate,
        "truth_pass_rate": record.ground_truth_pass_rate,
        "expected": record.expected,
        "failed_checks": record.failed_checks,
        "error": record.error,
        "no_ground_truth": record.no_ground_truth,
        "decoy": record.decoy,
        "answer": data.text(record.answer),
        "truth": data.text(record.ground_truth_answer),
        "diff": data.diff(record.ground_truth_answer, record.answer),
        "agreement": record.agreement,
        "facts": data.fact_states(record.fact_survival),
        "window": data.window(record.window_trace),
        "retrievals": [
            {**r, "text": data.text(r.get("text"))} if "text" in r else r for r in record.retrievals
        ],
        "tokens": {
            "prompt": record.prompt_tokens,
            "full": record.full_prompt_tokens,
            "cumulative": record.cumulative_input_tokens,
            "peak": record.peak_prompt_tokens,
            "cached_prefix": record.cached_prefix_tokens,
            "strategy_calls": record.strategy_calls,
            "strategy_input": record.strategy_input_tokens,
            "llm_calls": record.llm_calls,
            "memory_retrievals": record.memory_retrievals,
            "cost_usd": record.cost_usd,
            "cached_cost_usd": record.cached_cost_usd,
            "latency_s": record.latency_s,
            # The session's, once per session (see docs/costs.md).
            "session_cost_usd": record.session_cost_usd,
            "session_cached_cost_usd": record.session_cached_cost_usd,
            "session_strategy_calls": record.session_strategy_calls,
            "cache_model": record.cache_model,
            "cache_hit_ratio": record.session_cache_hit_ratio,
            "cache_break": _first_break(record.cache_breaks, record.cache_break_count),
        },
        "params": record.strategy_params,
        "tags": record.tags,
        "show": show_command(record),
    }


def _first_break(breaks: list[dict[str, Any]], count: int) -> str | None:
    """``request 7, message 0: timestamp (3 breaks)``; None when the prefix never broke."""
    if not breaks:
        return None
    first = breaks[0]
    where = "tools" if first.get("message") is None else f"message {first['message']}"
    text = f"request {first.get('request')}, {where}: {first.get('reason')}"
    return text + (f" ({count} breaks)" if count > 1 else "")


def plain_json(value: Any) -> str:
    """``value`` as compact JSON, NaN and infinities as null."""
    options: dict[str, Any] = {
        "ensure_ascii": False,
        "separators": (",", ":"),
        "default": str,
        "allow_nan": False,
    }
    try:
        return json.dumps(value, **options)
    except ValueError:  # a NaN or an infinity somewhere: walk it for them
        return json.dumps(_finite(value), **options)


def script_json(value: Any) -> Markup:
    """``value`` as JSON that is safe inside a ``<script>`` element: no ``<``,
    ``>`` or ``&`` in it, so no text can close the element or open a comment."""
    text = plain_json(value)
    for char, escaped in _UNSAFE_IN_SCRIPT.items():
        text = text.replace(char, escaped)
    return Markup(text)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as null: JSON has no word for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
