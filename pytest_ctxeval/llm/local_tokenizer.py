"""The mock models' tokenizer: tiktoken with the encoding file litellm bundles,
loaded without importing litellm (whose import costs seconds) and without
any download.

Decoding that file (200,000 base64 lines) takes about 0.2 s, in every
process: each xdist worker too.  The decoded vocabulary is kept for the
next process in a cache folder of the user's (``CTXEVAL_CACHE_DIR``, else
``$XDG_CACHE_HOME/ctxeval`` or ``~/.cache/ctxeval``; an empty
``CTXEVAL_CACHE_DIR`` keeps nothing).  A cached copy is used only if this
user wrote it and nobody else can change it; any problem with it means
decoding the file as before."""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

# The encoding litellm gives gpt-4o-mini, the model the mocks count like.
ENCODING = "o200k_base"
# litellm counts in chunks of this many characters (its default
# TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS); chunking the same way keeps the mocks'
# counts equal to litellm's for the same text.
CHUNK_CHARS = 1024
_PUBLIC_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
# tiktoken's expected SHA-256 of that file: tiktoken replaces a copy that does
# not match by downloading, so a damaged copy is refused here instead.
_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def bundled_encoding_dir() -> Path | None:
    """litellm's copy of tiktoken's cache (files named as tiktoken names them),
    found without importing litellm; None when litellm is not installed."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


def bundled_encoding_file() -> Path | None:
    """The bundled encoding file, if present (it is checked when it is decoded)."""
    directory = bundled_encoding_dir()
    if directory is None:
        return None
    # tiktoken's cache key: the SHA-1 of the URL it would download from.
    key = hashlib.sha1(_PUBLIC_URL.format(name=ENCODING).encode()).hexdigest()
    path = directory / key
    return path if path.is_file() else None


@cache
def local_encoding() -> Any | None:
    """The mocks' tiktoken encoding, or None when litellm's bundled copy is
    missing or damaged (then the caller counts through litellm: never a
    download)."""
    path = bundled_encoding_file()
    arguments = encoding_arguments(path) if path is not None else None
    if arguments is None:
        return None
    import tiktoken

    return tiktoken.Encoding(**arguments)


def encoding_arguments(path: Path) -> dict[str, Any] | None:
    """What ``tiktoken.Encoding`` is built from (name, pattern, vocabulary,
    special tokens): from the cache when it holds them, else decoded from
    ``path`` and kept there; None when ``path`` is damaged."""
    cached = _cache_file(path)
    arguments = _read_cache(cached) if cached is not None else None
    if arguments is None:
        arguments = _decode(path)
        if arguments is not None and cached is not None:
            _write_cache(cached, arguments)
    return arguments


def _decode(path: Path) -> dict[str, Any] | None:
    if hashlib.sha256(path.read_bytes()).hexdigest() != _SHA256:
        return None
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    # tiktoken reads its cache directory from the environment at load time;
    # point it at the bundled copy for this one load only.
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path.parent)
    try:
        return dict(openai_public.ENCODING_CONSTRUCTORS[ENCODING]())
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def cache_folder() -> Path | None:
    """Where the decoded vocabulary is kept; None: nowhere."""
    chosen = os.environ.get("CTXEVAL_CACHE_DIR")
    if chosen is not None:
        return Path(chosen).expanduser() if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "ctxeval"


def _cache_file(path: Path) -> Path | None:
    import tiktoken

    folder = cache_folder()
    if folder is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    # A new copy of the file, tiktoken or Python (marshal's format) is a new entry.
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{tiktoken.__version__}|{sys.version}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return folder / f"{ENCODING}-{digest}.marshal"


_ARGUMENT_TYPES = {"name": str, "pat_str": str, "mergeable_ranks": dict, "special_tokens": dict}


def _read_cache(cached: Path) -> dict[str, Any] | None:
    try:
        stat = cached.stat()
        owner = getattr(os, "getuid", None)
        if (owner is not None and stat.st_uid != owner()) or stat.st_mode & 0o022:
            return None  # someone else's, or writable by others: not trusted
        arguments = marshal.loads(cached.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(arguments, dict) or arguments.keys() != _ARGUMENT_TYPES.keys():
        return None
    if not all(isinstance(arguments[k], kind) for k, kind in _ARGUMENT_TYPES.items()):
        return None
    return arguments


def _write_cache(cached: Path, arguments: dict[str, Any]) -> None:
    """Write the whole file or nothing; drop this encoding's older entries."""
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
    try:
        cached.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(marshal.dumps(arguments))
        os.replace(partial, cached)
        for old in cached.parent.glob(f"{ENCODING}-*.marshal"):
            if old != cached:
                old.unlink(missing_ok=True)
    except (OSError, ValueError):
        partial.unlink(missing_ok=True)  # a cache that cannot be written is no cache


def count_plainly(encoding: Any, text: str) -> int:
    """Tokens of ``text``, chunked as litellm chunks it; special tokens such as
    ``<|endoftext|>`` count as the plain text they are in a message."""
    return sum(
        len(encoding.encode_ordinary(text[start : start + CHUNK_CHARS]))
        for start in range(0, len(text), CHUNK_CHARS)
    )


def count_locally(encoding: Any, text: str) -> int:
    """``count_plainly(encoding, text)``, with the lines of a chunk that were
    counted before not tokenized again.

    A text a strategy rebuilds on every turn from lines it sent before (a
    memory listing, retrieved notes) would otherwise be tokenized whole each
    time.  ENCODING's pattern never carries a token across a line break that
    is followed by a character other than whitespace or "/" (no piece goes on
    after a line break but a run of whitespace, or of line breaks and "/"
    after punctuation), so a chunk's tokens are its lines' tokens added up.
    A text's first chunk with lines is counted by lines; the rest only if
    most of those lines had been counted before, so a long tool output of
    lines seen once costs no more than counting it plainly."""
    total = 0
    by_lines: bool | None = None  # decided by the first chunk with a line break
    for start in range(0, len(text), CHUNK_CHARS):
        chunk = text[start : start + CHUNK_CHARS]
        if by_lines is False or "\n" not in chunk:
            total += len(encoding.encode_ordinary(chunk))
            continue
        tokens, lines, seen = _count_lines(encoding, chunk)
        total += tokens
        if by_lines is None:
            by_lines = 2 * seen > lines
    return total


# Tokens of the lines counted so far (see count_locally), by their text.
_LINE_TOKENS: dict[str, int] = {}
_LINES_REMEMBERED = 200_000


def _lines(chunk: str) -> list[str]:
    """The chunk cut after each line break that is followed by neither
    whitespace nor "/" (see count_locally)."""
    pieces = chunk.split("\n")
    lines: list[str] = []
    line = pieces[0]
    for piece in pieces[1:]:
        if piece and piece[0] != "/" and not piece[0].isspace():
            lines.append(line + "\n")
            line = piece
        else:
            line += "\n" + piece
    lines.append(line)
    return lines


def _count_lines(encoding: Any, chunk: str) -> tuple[int, int, int]:
    """The chunk's tokens, its lines, and how many were counted before."""
    if len(_LINE_TOKENS) >= _LINES_REMEMBERED:
        _LINE_TOKENS.clear()
    lines = _lines(chunk)
    total = seen = 0
    for line in lines:
        tokens = _LINE_TOKENS.get(line)
        if tokens is None:
            tokens = _LINE_TOKENS[line] = len(encoding.encode_ordinary(line))
        else:
            seen += 1
        total += tokens
    return total, len(lines), seen
