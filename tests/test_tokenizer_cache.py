"""The mocks' tokenizer keeps its decoded vocabulary for the next process:
a later load skips decoding, counts the same, and never trusts a copy it
should not."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import tiktoken

from pytest_ctxeval.llm import local_tokenizer
from pytest_ctxeval.llm.local_tokenizer import bundled_encoding_file, encoding_arguments

TEXTS = ["The launch code is 4-4-2.", '{"span": "0a1b", "duration_ms": 12}', "naïve café ✓ " * 40]


@pytest.fixture
def bundled() -> Path:
    path = bundled_encoding_file()
    if path is None:  # litellm ships the file; without it the mocks count through litellm
        pytest.skip("litellm's bundled encoding file is not installed")
    return path


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every time the bundled file is decoded (not read from the cache)."""
    calls: list[Path] = []
    decode = local_tokenizer._decode

    def counted(path: Path):  # type: ignore[no-untyped-def]
        calls.append(path)
        return decode(path)

    monkeypatch.setattr(local_tokenizer, "_decode", counted)
    return calls


def counts(arguments: dict[str, object]) -> list[list[int]]:
    encoding = tiktoken.Encoding(**arguments)  # type: ignore[arg-type]
    return [encoding.encode_ordinary(text) for text in TEXTS]


def test_a_later_load_reads_the_vocabulary_and_counts_the_same(
    bundled: Path, decodes: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_CACHE_DIR", str(tmp_path / "cache"))
    first = encoding_arguments(bundled)
    assert decodes == [bundled]
    [cached] = (tmp_path / "cache").iterdir()
    assert stat.S_IMODE(cached.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    second = encoding_arguments(bundled)
    assert decodes == [bundled]  # not decoded again
    assert second == first
    assert counts(second) == counts(first)
    assert len(first["mergeable_ranks"]) > 199_000  # type: ignore[arg-type]


def test_a_damaged_or_open_copy_is_decoded_again(
    bundled: Path, decodes: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_CACHE_DIR", str(tmp_path))
    encoding_arguments(bundled)
    [cached] = tmp_path.glob("*.marshal")
    cached.write_bytes(b"\x00not marshal")
    assert counts(encoding_arguments(bundled)) == counts(local_tokenizer._decode(bundled))
    assert len(decodes) == 3  # the first load, the damaged copy, the reference
    cached.chmod(0o666)  # anyone may change it: not trusted
    encoding_arguments(bundled)
    assert len(decodes) == 4


def test_an_empty_cache_setting_keeps_nothing_and_an_old_entry_goes(
    bundled: Path, decodes: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXEVAL_CACHE_DIR", "")
    encoding_arguments(bundled)
    encoding_arguments(bundled)
    assert len(decodes) == 2
    monkeypatch.setenv("CTXEVAL_CACHE_DIR", str(tmp_path))
    stale = tmp_path / "o200k_base-0123456789abcdef.marshal"  # an older tiktoken's entry
    stale.write_bytes(b"old")
    encoding_arguments(bundled)
    assert not stale.exists() and len(list(tmp_path.iterdir())) == 1


def test_a_damaged_bundled_file_is_refused_not_decoded(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tiktoken would replace a copy that does not match by downloading it.
    monkeypatch.setenv("CTXEVAL_CACHE_DIR", str(tmp_path / "cache"))
    damaged = tmp_path / bundled.name
    data = bytearray(bundled.read_bytes())
    data[100] ^= 1
    damaged.write_bytes(bytes(data))
    assert encoding_arguments(damaged) is None
    assert not (tmp_path / "cache").exists()  # nothing kept for it
