"""The progress line refreshed in place, on the row under pytest's own output.

pytest's current line (a file's dots, ``[ 40%]``) stays where it is: the
live line is written one row below and the cursor put back where pytest
left it, so what pytest writes next lands where it would have.  It is erased
before pytest writes (an item starts or reports) and drawn again after.
Written to the terminal writer's file, past the writer's own bookkeeping of
the current line, which must keep measuring pytest's text alone.

Only on a terminal that takes escape sequences, and only when nothing else
writes while items run (live logging, ``-s``): otherwise plain lines."""

from __future__ import annotations

from typing import Any

import pytest

_SAVE, _RESTORE, _CLEAR = "\x1b7", "\x1b8", "\x1b[2K"


class LiveLine:
    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.shown = False

    @classmethod
    def for_reporter(cls, reporter: Any, config: pytest.Config) -> LiveLine:
        writer = getattr(reporter, "_tw", None)
        line = cls(writer)
        file = getattr(writer, "_file", None)
        isatty = getattr(file, "isatty", None)
        line.usable = bool(
            writer is not None
            and getattr(writer, "hasmarkup", False)
            and callable(isatty)
            and isatty()
            and config.getoption("capture", "fd") != "no"
            and not config.getini("log_cli")
            and config.getoption("log_cli_level", None) is None
        )
        return line

    usable = False

    def draw(self, text: str) -> None:
        column = self.writer.width_of_current_line
        width = max(self.writer.fullwidth - 1, 10)
        # A new row first (the screen scrolls if need be), back up to pytest's
        # row and column, then the live line below it and back again.
        forward = f"\x1b[{column}C" if column else ""
        self._raw(f"\n\x1b[1A{forward}{_SAVE}\n{_CLEAR}{text[:width]}{_RESTORE}")
        self.shown = True

    def erase(self) -> None:
        if self.shown:
            self._raw(f"{_SAVE}\n{_CLEAR}{_RESTORE}")
            self.shown = False

    def _raw(self, text: str) -> None:
        file = self.writer._file
        file.write(text)
        file.flush()
