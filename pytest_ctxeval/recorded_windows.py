"""The windows production sent, as an imported scenario carries them.

``ctxeval import otel|openinference|...`` writes, next to each scenario, a
JSON file of the windows the traced application really sent (one per chat
span), and the scenario names it in ``recorded_windows``.  The ``recorded``
strategy replays them.  This module is the file format only: no reading of
files (the scenario loader does that, confined like ``!include``), no
strategies, no evaluation, so both sides can use it.

The file::

    {"format": "ctxeval-recorded-windows/1",
     "scenario": "checkout-session",
     "windows": [{"at_message": 1, "turn": 1, "span": "trace/span",
                  "messages": [...], "tools": [...]}, ...]}

``at_message`` is the number of session messages (after the system prompt)
the application had been given when it made the call, the current one (a
user message or a tool result) included: the call that answers message N is
recorded at N; the probe, asked after the whole session, at its length + 1.
``messages`` and ``tools`` are the request's, exactly as sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FORMAT = "ctxeval-recorded-windows/1"


@dataclass(frozen=True)
class RecordedWindow:
    at_message: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    turn: int | None = None  # the user turn (1-based) the call belongs to
    span: str = ""  # where in the trace it came from: "trace id/span id"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"at_message": self.at_message}
        if self.turn is not None:
            data["turn"] = self.turn
        if self.span:
            data["span"] = self.span
        data["messages"] = self.messages
        data["tools"] = self.tools
        return data


class RecordedWindowsError(ValueError):
    """A recorded-windows file that does not hold what the format says."""


def windows_document(scenario_id: str, windows: list[RecordedWindow]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "scenario": scenario_id,
        "windows": [w.to_json() for w in sorted(windows, key=lambda w: w.at_message)],
    }


def parse_windows(data: Any) -> dict[int, RecordedWindow]:
    """``at_message`` -> window, from a parsed file; RecordedWindowsError
    names the first thing wrong and what would be accepted."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise RecordedWindowsError(f'expected a JSON object with "format": "{FORMAT}"')
    items = data.get("windows")
    if not isinstance(items, list):
        raise RecordedWindowsError('"windows": expected a list of windows')
    found: dict[int, RecordedWindow] = {}
    for i, item in enumerate(items):
        where = f"windows[{i}]"
        if not isinstance(item, Mapping):
            raise RecordedWindowsError(f"{where}: expected an object")
        at = item.get("at_message")
        if not isinstance(at, int) or isinstance(at, bool) or at < 1:
            raise RecordedWindowsError(f"{where}.at_message: expected a whole number >= 1")
        if at in found:
            raise RecordedWindowsError(f"{where}.at_message: {at} is recorded twice")
        messages, tools = item.get("messages"), item.get("tools", [])
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise RecordedWindowsError(f"{where}.messages: expected a list of message objects")
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise RecordedWindowsError(f"{where}.tools: expected a list of tool objects")
        turn = item.get("turn")
        found[at] = RecordedWindow(
            at_message=at,
            messages=messages,
            tools=tools,
            turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
            span=str(item.get("span") or ""),
        )
    return found
