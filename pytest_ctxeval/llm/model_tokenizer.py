"""A model's own tokenizer, for a model served locally or unknown to litellm
(``--ctx-tokenizer PATH``): a Hugging Face ``tokenizer.json``, or the
tokenizer a GGUF model file carries in its metadata.

litellm counts a model it does not know with a default OpenAI encoding, and
a small local model's vocabulary can be far from it (SmolLM2's counts the
same text about 45 % higher), so the window sizes, budgets and
``beyond_context`` decisions of such a run would be off by as much.

GGUF metadata is read here directly (a short header of key/value pairs
before the tensors: no dependency, nothing else of the file is read), and
its byte-level BPE vocabulary (``tokenizer.ggml.model`` = ``gpt2``, the
Llama 3, Qwen, SmolLM and GPT-2 families) becomes a ``tokenizers``
tokenizer, the library litellm already installs.  Offline throughout.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

GGUF_MAGIC = b"GGUF"
# llama.cpp's pre-tokenizer names (``tokenizer.ggml.pre``) whose split is
# GPT-2's byte-level split with each digit on its own; the rest split as GPT-2.
_SINGLE_DIGITS = frozenset({"smollm", "smaug-bpe", "refact"})


class TokenizerFileError(ValueError):
    """A tokenizer file that cannot be used; the message names it and why."""


@dataclass(frozen=True)
class ModelTokenizer:
    """A tokenizer and the name records show for it."""

    name: str
    tokenizer: Any  # tokenizers.Tokenizer

    def count(self, text: str) -> int:
        # Plain text: special-token strings in a message count as their text.
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


def load_tokenizer(path: str | Path) -> ModelTokenizer:
    """The tokenizer in ``path``: a ``tokenizer.json`` or a ``.gguf`` model file."""
    path = Path(path)
    if not path.is_file():
        raise TokenizerFileError(f"{path}: no such file (expected a tokenizer.json or a .gguf)")
    with path.open("rb") as handle:
        is_gguf = handle.read(4) == GGUF_MAGIC
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - installed with litellm
        raise TokenizerFileError(
            f"{path}: reading a tokenizer needs the 'tokenizers' package (pip install tokenizers)"
        ) from None
    if is_gguf:
        return ModelTokenizer(f"gguf:{path.name}", _gguf_tokenizer(path))
    try:
        return ModelTokenizer(f"tokenizer.json:{path.name}", Tokenizer.from_file(str(path)))
    except Exception as exc:
        raise TokenizerFileError(
            f"{path}: not a tokenizer.json or a .gguf file ({type(exc).__name__}: {exc})"
        ) from None


def _gguf_tokenizer(path: Path) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    meta = read_gguf_metadata(path, prefix="tokenizer.")
    kind = meta.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise TokenizerFileError(
            f"{path}: its tokenizer is {kind!r}; only byte-level BPE ('gpt2') is read from "
            "GGUF: pass --ctx-tokenizer the model's tokenizer.json instead"
        )
    tokens, merges = meta.get("tokenizer.ggml.tokens"), meta.get("tokenizer.ggml.merges")
    if not isinstance(tokens, list) or not isinstance(merges, list):
        raise TokenizerFileError(f"{path}: the GGUF metadata has no tokens or merges")
    vocab = {token: index for index, token in enumerate(tokens)}
    pairs = [tuple(merge.split(" ", 1)) for merge in merges]
    tokenizer = Tokenizer(models.BPE(vocab, pairs, ignore_merges=False))
    split = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if meta.get("tokenizer.ggml.pre") in _SINGLE_DIGITS:
        digits = pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated")
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([digits, split])
    else:
        tokenizer.pre_tokenizer = split
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


# GGUF value types: scalar struct formats by type id; 8 is a string, 9 an array.
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING, _ARRAY = 8, 9


def read_gguf_metadata(path: str | Path, prefix: str = "") -> dict[str, Any]:
    """The key/value metadata of a GGUF file (versions 2 and 3), keys that
    start with ``prefix`` only (the others are skipped, not decoded)."""
    path = Path(path)
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise TokenizerFileError(f"{path}: not a GGUF file")
        version = _unpack(handle, "<I", path)
        if version < 2:
            raise TokenizerFileError(f"{path}: GGUF version {version} is not supported (2 or 3)")
        _unpack(handle, "<Q", path)  # tensor count
        count = _unpack(handle, "<Q", path)
        meta: dict[str, Any] = {}
        for _ in range(count):
            key = _string(handle, path)
            kind = _unpack(handle, "<I", path)
            wanted = key.startswith(prefix)
            value = _value(handle, kind, path, keep=wanted)
            if wanted:
                meta[key] = value
        return meta


def _value(handle: BinaryIO, kind: int, path: Path, *, keep: bool) -> Any:
    if kind in _SCALARS:
        return _unpack(handle, "<" + _SCALARS[kind], path)
    if kind == _STRING:
        return _string(handle, path)
    if kind == _ARRAY:
        item_kind = _unpack(handle, "<I", path)
        length = _unpack(handle, "<Q", path)
        if not keep and item_kind in _SCALARS:  # skipped in one seek
            handle.seek(length * struct.calcsize("<" + _SCALARS[item_kind]), 1)
            return None
        items = [_value(handle, item_kind, path, keep=keep) for _ in range(length)]
        return items if keep else None
    raise TokenizerFileError(f"{path}: unknown GGUF value type {kind}")


def _string(handle: BinaryIO, path: Path) -> str:
    length = _unpack(handle, "<Q", path)
    data = handle.read(length)
    if len(data) != length:
        raise TokenizerFileError(f"{path}: the GGUF metadata ends early")
    return data.decode("utf-8", errors="replace")


def _unpack(handle: BinaryIO, fmt: str, path: Path) -> Any:
    size = struct.calcsize(fmt)
    data = handle.read(size)
    if len(data) != size:
        raise TokenizerFileError(f"{path}: the GGUF metadata ends early")
    return struct.unpack(fmt, data)[0]
