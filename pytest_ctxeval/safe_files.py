"""Writing the run's files without following symbolic links.

A pull request can commit ``reports/results.jsonl`` as a link to
``~/.bashrc``.  The run refuses such links before it starts (see
output_paths.py); here every file it writes is opened with ``O_NOFOLLOW`` or
written to a fresh temporary file that is renamed over the target (a rename
replaces a link, never what it points at), so a link that appears later is
not followed either."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Not on every platform (Windows has no symbolic links to fear here).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Large enough that zlib, which lets other threads run while it works,
# holds the interpreter's lock a small part of the time.
COPY_BLOCK = 1 << 20


def open_no_follow(path: Path, *, append: bool = False) -> int:
    """A file descriptor for writing ``path`` (truncated, or appended to),
    creating it and its folders; OSError (ELOOP) when it is a symbolic link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    return os.open(path, flags, 0o666)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data``; os.write may write less than it was given."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (not a character, so not encodable)
    is written as its escape, ``\\ud800``: a JSON reader reads it back."""
    return text.encode("utf-8", "backslashreplace")


def append_text(path: Path, text: str) -> None:
    fd = open_no_follow(path, append=True)
    try:
        write_all(fd, utf8(text))
    finally:
        os.close(fd)


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` to a new file next to ``path`` and rename it over
    ``path``: all of it or, on failure (a full disk), the old file as it was."""
    data = utf8(text)
    _replace(path, lambda fd: write_all(fd, data))


def replace_with_copy(path: Path, source: Path) -> None:
    """``replace_text`` with the bytes of ``source``, copied a block at a
    time (a LoCoMo-size results file is hundreds of MB)."""

    def copy(fd: int) -> None:
        with source.open("rb") as read, os.fdopen(os.dup(fd), "wb") as write:
            shutil.copyfileobj(read, write)

    _replace(path, copy)


def replace_with_gzip(path: Path, source: Path, *, level: int) -> None:
    """``replace_text`` with the bytes of ``source`` gzip-compressed at
    ``level``, a block at a time; the same bytes for the same input (no name
    or time in the header)."""

    def compress(fd: int) -> None:
        with (
            source.open("rb") as read,
            os.fdopen(os.dup(fd), "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=raw, mtime=0) as out,
        ):
            shutil.copyfileobj(read, out, COPY_BLOCK)

    _replace(path, compress)


def replace_with_link(path: Path, source: Path) -> None:
    """``path`` made a second name of ``source``'s file, a hard link: no
    second copy on disk, and safe because nothing here changes a written file
    in place (each is replaced by a new one).  A copy (``replace_with_copy``)
    where the file system has no hard links."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A name nobody has: os.link fails rather than replace what is there.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        os.link(source, tmp, follow_symlinks=False)
    except (OSError, NotImplementedError):  # no hard links here, or not without following
        replace_with_copy(path, source)
        return
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _replace(path: Path, fill: Callable[[int], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
