"""Search indexes for ``rag``: BM25 by default, embeddings behind an extra.

BM25 (``bm25.py``) is pure Python and numpy, deterministic and needs no
download, so it is the default.  The embedding index is a seam: it needs the
optional extra ``pytest-ctxeval[embeddings]`` (sentence-transformers) and
says so when it is missing.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Protocol

from .bm25 import BM25Index

EMBEDDINGS_EXTRA = "embeddings"
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class MissingExtraError(ImportError):
    """An optional backend whose package is not installed."""


class SearchIndex(Protocol):
    """Documents in, ranked document numbers out."""

    def add(self, text: str) -> int: ...

    def search(self, query: str, k: int) -> list[int]: ...


class EmbeddingIndex:
    """Cosine similarity over sentence-transformers embeddings (optional extra)."""

    def __init__(self, model_name: str = DEFAULT_EMBEDDING_MODEL) -> None:
        # Nothing may download at run time: the model must already be on disk
        # (a local path, or a model cached or shipped in a package).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
        except ImportError:
            raise MissingExtraError(
                "rag backend 'embeddings' needs the optional extra: "
                f"pip install 'pytest-ctxeval[{EMBEDDINGS_EXTRA}]' (sentence-transformers); "
                "or use backend 'bm25', which needs nothing"
            ) from None
        self.model_name = model_name
        try:
            self.model: Any = SentenceTransformer(model_name)
        except OSError as exc:
            raise MissingExtraError(
                f"rag backend 'embeddings': model {model_name!r} is not available offline "
                f"({exc}); pass embedding_model= a local model directory"
            ) from None
        self.vectors: list[list[float]] = []

    def add(self, text: str) -> int:
        vector = self.model.encode([text], normalize_embeddings=True)[0]
        self.vectors.append([float(x) for x in vector])
        return len(self.vectors) - 1

    def search(self, query: str, k: int) -> list[int]:
        if not self.vectors or k < 1:
            return []
        q = [float(x) for x in self.model.encode([query], normalize_embeddings=True)[0]]
        scores = [
            (sum(a * b for a, b in zip(q, v, strict=True)), i) for i, v in enumerate(self.vectors)
        ]
        scores.sort(key=lambda item: (-item[0], -item[1]))
        return [i for _, i in scores[:k]]

    def __deepcopy__(self, memo: dict[int, Any]) -> EmbeddingIndex:
        # Forks share the (read-only, large) model and copy only the vectors.
        clone = EmbeddingIndex.__new__(EmbeddingIndex)
        clone.model_name, clone.model = self.model_name, self.model
        clone.vectors = copy.deepcopy(self.vectors, memo)
        memo[id(self)] = clone
        return clone


BACKENDS = ("bm25", "embeddings")


def make_index(backend: str, embedding_model: str | None = None) -> SearchIndex:
    if backend == "bm25":
        return BM25Index()
    if backend == "embeddings":
        return EmbeddingIndex(embedding_model or DEFAULT_EMBEDDING_MODEL)
    raise ValueError(f"rag: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
