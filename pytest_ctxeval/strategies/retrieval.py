"""Search indexes for ``rag``: BM25 by default, embeddings behind an extra.

BM25 (Robertson & Zaragoza's Okapi BM25, k1=1.5, b=0.75 as in ``rank_bm25``)
is a few lines of pure Python, deterministic and needs no download, so it is
the default.  The embedding index is a seam: it needs the optional extra
``pytest-ctxeval[embeddings]`` (sentence-transformers) and says so when it is
missing.
"""

from __future__ import annotations

import copy
import math
import os
from array import array
from collections import Counter
from typing import Any, Protocol

from ..llm.text import terms

EMBEDDINGS_EXTRA = "embeddings"
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class MissingExtraError(ImportError):
    """An optional backend whose package is not installed."""


class SearchIndex(Protocol):
    """Documents in, ranked document numbers out."""

    def add(self, text: str) -> int: ...

    def search(self, query: str, k: int) -> list[int]: ...


class BM25Index:
    """Okapi BM25 over the same terms the mock model reads (lower-cased, stemmed).

    A query scores every document that shares a term with it, and in a long
    session common terms are in most documents: the scoring runs over
    arrays (numpy, which pandas brings), one term after another in a fixed
    order, so each score is the same sum, bit for bit, that a plain loop adds."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.lengths = array("q")  # terms per document
        self.total_length = 0
        # term -> (documents, term frequencies), appended to in place: a
        # search reads only the documents that share a term with the query.
        # Frequencies are kept as floats, the type the scoring works in.
        self.postings: dict[str, tuple[array[int], array[float]]] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> BM25Index:
        # Arrays of numbers copy whole (a fork is made per probe; deepcopy
        # would go through the postings value by value).
        copied = BM25Index(self.k1, self.b)
        copied.lengths = self.lengths[:]
        copied.total_length = self.total_length
        copied.postings = {t: (docs[:], tfs[:]) for t, (docs, tfs) in self.postings.items()}
        memo[id(self)] = copied
        return copied

    def add(self, text: str) -> int:
        doc = len(self.lengths)
        counts = Counter(terms(text))
        for term, tf in counts.items():
            docs, tfs = self.postings.setdefault(term, (array("q"), array("d")))
            docs.append(doc)
            tfs.append(tf)
        self.lengths.append(sum(counts.values()))
        self.total_length += self.lengths[-1]
        return doc

    def search(self, query: str, k: int) -> list[int]:
        import numpy as np

        n = len(self.lengths)
        if not n or k < 1:
            return []
        average = self.total_length / n or 1.0
        lengths = np.frombuffer(self.lengths, dtype=np.int64)
        scores = np.zeros(n)
        norms = None  # every document's length norm, once a common term needs most of them
        for term in sorted(set(terms(query))):  # a fixed order: float sums repeat exactly
            found = self.postings.get(term)
            if found is None:
                continue
            docs = np.frombuffer(found[0], dtype=np.int64)
            tfs = np.frombuffer(found[1], dtype=np.float64)
            idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            # The same operations, in the same order, as for one document:
            # k1 * (1 - b + b * length / average), then idf * tf * (k1 + 1) / (tf + norm).
            if 4 * len(docs) < n:
                norm = self.k1 * (1 - self.b + self.b * lengths[docs] / average)
                scores[docs] += idf * tfs * (self.k1 + 1) / (tfs + norm)
                continue
            if norms is None:
                norms = self.k1 * (1 - self.b + self.b * lengths / average)
            if len(docs) == n:  # in every document: documents 0 to n - 1, in order
                scores += idf * tfs * (self.k1 + 1) / (tfs + norms)
            else:
                scores[docs] += idf * tfs * (self.k1 + 1) / (tfs + norms[docs])
        # The k best, ties to the later document: the most recent statement
        # of a fact wins.  lexsort orders by score, then document number.
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            # Only documents scoring at least the k-th best can be among the
            # k best: partitioning finds that score without sorting them all.
            positive = scores[candidates]
            kth = np.partition(positive, len(positive) - k)[len(positive) - k]
            candidates = candidates[positive >= kth]
        order = np.lexsort((candidates, scores[candidates]))
        return [int(doc) for doc in candidates[order[::-1][:k]]]


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
