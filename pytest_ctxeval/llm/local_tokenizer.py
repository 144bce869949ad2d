"""The mock models' tokenizer: tiktoken with the encoding file litellm bundles,
loaded without importing litellm (whose import costs seconds) and without
any download."""

from __future__ import annotations

import hashlib
import importlib.util
import os
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
    """The bundled encoding file, if present and intact."""
    directory = bundled_encoding_dir()
    if directory is None:
        return None
    # tiktoken's cache key: the SHA-1 of the URL it would download from.
    key = hashlib.sha1(_PUBLIC_URL.format(name=ENCODING).encode()).hexdigest()
    path = directory / key
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != _SHA256:
        return None
    return path


@cache
def local_encoding() -> Any | None:
    """The mocks' tiktoken encoding, or None when litellm's bundled copy is
    missing (then the caller counts through litellm: never a download)."""
    path = bundled_encoding_file()
    if path is None:
        return None
    import tiktoken

    # tiktoken reads its cache directory from the environment at load time;
    # point it at the bundled copy for this one load only.
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(path.parent)
    try:
        return tiktoken.get_encoding(ENCODING)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def count_locally(encoding: Any, text: str) -> int:
    """Tokens of ``text``, chunked as litellm chunks it; special tokens such as
    ``<|endoftext|>`` count as the plain text they are in a message."""
    return sum(
        len(encoding.encode_ordinary(text[start : start + CHUNK_CHARS]))
        for start in range(0, len(text), CHUNK_CHARS)
    )
