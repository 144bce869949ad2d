"""The progress line drawn in place on a terminal: pytest's own row is left as
it was, the live line sits on the row below, and erasing it leaves nothing.

The escape sequences are played on a small screen model (cursor save and
restore, up, forward, clear line), so what a user sees is what is checked."""

from __future__ import annotations

import re

from pytest_ctxeval.live.terminal_line import LiveLine


class Screen:
    """A terminal's rows and cursor, for the few sequences the line uses."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0
        self.saved = (0, 0)

    def write(self, text: str) -> None:
        for token in re.findall(r"\x1b7|\x1b8|\x1b\[\d*[A-Z]|\x1b\[2K|.|\n", text, re.S):
            if token == "\n":
                self.row += 1
                self.col = 0
                while len(self.rows) <= self.row:
                    self.rows.append([])
            elif token == "\x1b7":
                self.saved = (self.row, self.col)
            elif token == "\x1b8":
                self.row, self.col = self.saved
            elif token == "\x1b[2K":
                self.rows[self.row] = []
            elif token.startswith("\x1b["):
                count = int(token[2:-1] or 1)
                if token.endswith("A"):
                    self.row -= count
                elif token.endswith("C"):
                    self.col += count
            else:
                line = self.rows[self.row]
                line.extend(" " * (self.col - len(line)))
                line[self.col : self.col + 1] = [token]
                self.col += 1

    def flush(self) -> None:
        pass

    def text(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.rows]


class Writer:
    """pytest's terminal writer as the line uses it: the file, the width and
    how much of the current row pytest has written."""

    def __init__(self, screen: Screen) -> None:
        self._file = screen
        self.fullwidth = 80
        self.width_of_current_line = 0

    def write(self, text: str) -> None:  # pytest's own output
        self._file.write(text)
        self.width_of_current_line = len(text.rsplit("\n", 1)[-1])


def test_the_line_sits_below_pytests_row_and_pytest_goes_on_where_it_was() -> None:
    screen = Screen()
    writer = Writer(screen)
    line = LiveLine(writer)
    writer.write("scenarios/a.yaml ..")
    line.draw("ctxeval: 2/5 items, 4 model calls")
    assert screen.text() == ["scenarios/a.yaml ..", "ctxeval: 2/5 items, 4 model calls"]
    line.erase()
    writer.write(".")  # pytest's next dot lands right after the others
    assert screen.text()[0] == "scenarios/a.yaml ..."
    assert screen.text()[1:] == [""]


def test_a_line_wider_than_the_terminal_is_cut_to_fit() -> None:
    screen = Screen()
    writer = Writer(screen)
    LiveLine(writer).draw("x" * 200)
    assert screen.text()[1] == "x" * 79


def test_erasing_a_line_never_drawn_writes_nothing() -> None:
    screen = Screen()
    LiveLine(Writer(screen)).erase()
    assert screen.text() == [""]
