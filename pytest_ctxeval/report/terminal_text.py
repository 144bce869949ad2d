"""Scenario and model text made safe to print in a terminal.

A model answer or a scenario turn may carry escape sequences that recolour,
move the cursor, clear the screen or rename the window, and a carriage return
or NUL that hides what came before it.  Printed as is, the failure report
would show something other than the text.  Escape sequences are removed;
any other control character is shown as a visible escape (``\\r``,
``\\x00``), so the reader sees that it was there.  Newlines and tabs stay.
"""

from __future__ import annotations

import re

_ESCAPE_SEQUENCES = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]           # CSI: colours, cursor moves, erasing
    | \x9b[0-?]*[ -/]*[@-~]             # the same, as one 8-bit character
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\) # OSC: window titles, hyperlinks
    | \x1b[PX^_][^\x1b]*\x1b\\          # DCS, SOS, PM, APC strings
    | \x1b[@-Z\\-_]                     # two-character escapes
    """,
    re.X,
)
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional
# overrides and isolates that reorder how the rest of a line is displayed.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` without escape sequences, other control characters made visible."""
    return _CONTROL.sub(_visible, _ESCAPE_SEQUENCES.sub("", text))


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
