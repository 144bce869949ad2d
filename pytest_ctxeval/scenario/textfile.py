"""Read a scenario (or included) file as UTF-8 text, refusing what is not a
readable regular file of bounded size.  A FIFO or device named ``*.yaml`` is
refused without blocking: the file is opened non-blocking and checked before
anything is read."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

from .limits import Limits

# Byte-order marks of encodings other than UTF-8, longest first (UTF-32-LE
# starts like UTF-16-LE).
_FOREIGN_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


class FileProblem(ValueError):
    """Why a file cannot be read; ``line`` and ``column`` (1-based) point into it."""

    def __init__(self, message: str, line: int = 1, column: int = 1, missing: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.missing = missing


def read_text_file(path: Path, limits: Limits) -> str:
    """The file's text; a UTF-8 byte-order mark is dropped."""
    data = _read_bytes(path, limits)
    for bom, name in _FOREIGN_BOMS:
        if data.startswith(bom):
            raise FileProblem(
                f"the file is {name} (it starts with a {name} byte-order mark); "
                "expected UTF-8: save it as UTF-8"
            )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, column = _line_column(data, exc.start)
        raise FileProblem(
            f"not UTF-8: byte 0x{data[exc.start]:02x} at line {line}, column {column} "
            f"({exc.reason}); expected UTF-8 text: save the file as UTF-8",
            line,
            column,
        ) from None


def _read_bytes(path: Path, limits: Limits) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise FileProblem("no such file", missing=True) from None
    except IsADirectoryError:
        raise FileProblem("is a directory, not a file") from None
    except OSError as exc:
        raise FileProblem(f"cannot open: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileProblem("is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"is a {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limits.file_bytes:
            raise FileProblem(limits.exceeded("file_bytes", f"the file has {info.st_size:,} bytes"))
        # Read one byte past the limit: a file that grows while we read it
        # is refused as well.
        chunks = []
        remaining = limits.file_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limits.file_bytes:
            raise FileProblem(
                limits.exceeded("file_bytes", f"the file has more than {limits.file_bytes:,} bytes")
            )
        return data
    except OSError as exc:
        raise FileProblem(f"cannot read: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _reason(exc: OSError) -> str:
    return exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))


def _line_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    if line_start == 0 and data.startswith(codecs.BOM_UTF8):
        line_start = len(codecs.BOM_UTF8)  # not a character of the text
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return line, column
