"""Okapi BM25 for ``rag``: exact top-k without scoring every document.

Robertson & Zaragoza's Okapi BM25 (k1=1.5, b=0.75 as in ``rank_bm25``),
pure Python and numpy (which pandas brings), deterministic, no download.

In a long session the index grows every turn and a search runs every turn,
so a search that scores every document makes the session quadratic.  The
common words of a session ("turn", "user") are in every document, yet they
weigh almost nothing; the words that decide the ranking are rarer.  A
search therefore scores, first, only the documents of its weightiest terms,
and stops there once no document outside them could reach the k-th best
score (Turtle and Flood's MaxScore, over arrays): each term's score is
bounded by its largest term frequency and its shortest document.

When every word of the question is common (a session with a small
vocabulary), the search has to score every document.  A term in most
documents is then scored from its frequencies in all of them, kept between
searches, rather than gathered and scattered over its own documents: a
quarter of the time per document.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..llm.text import terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Docs = npt.NDArray[np.int64]
    Scores = npt.NDArray[np.float64]

# A bound is compared with summed scores; this slack covers float rounding
# (a few ulps per operation) many times over.
_ROUNDING_SLACK = 1e-9
# Past this share of the documents, scoring them all at once is cheaper.
_FEW = 0.25
# A term with at most this many times the chosen documents is scored over
# all of its own (one pass) rather than looked up (a binary search each).
_SCATTER = 4


class Posting:
    """One term's documents in order, their term frequencies (floats, the
    type the scoring works in), and what bounds the term's score."""

    __slots__ = ("docs", "tfs", "max_tf", "min_length", "dense", "covered")

    def __init__(self) -> None:
        self.docs = array("q")
        self.tfs = array("d")
        self.max_tf = 0.0
        self.min_length = 1 << 62
        self.dense: Scores | None = None  # see dense_tfs
        self.covered = 0  # documents the dense frequencies hold

    def copy(self) -> Posting:
        # The dense frequencies are left out: a fork's first search that
        # needs them builds its own.
        copied = Posting()
        copied.docs, copied.tfs = self.docs[:], self.tfs[:]
        copied.max_tf, copied.min_length = self.max_tf, self.min_length
        return copied

    def dense_tfs(self, n: int) -> Scores:
        """The term frequencies of documents 0 to ``n - 1``, 0.0 where the term
        is absent.  A term in most documents scores faster over all of them
        at once than gathered and scattered over its own; the array is kept,
        and a later search fills in only the documents added since."""
        import numpy as np

        dense = self.dense
        if dense is None or len(dense) < n:  # room for twice as many: amortised growth
            grown = np.zeros(max(n, 2 * self.covered))
            if dense is not None:
                grown[: self.covered] = dense[: self.covered]
            self.dense = dense = grown
        docs = np.frombuffer(self.docs, dtype=np.int64)
        new = int(np.searchsorted(docs, self.covered))
        dense[docs[new:]] = np.frombuffer(self.tfs, dtype=np.float64)[new:]
        self.covered = n
        return dense[:n]


class BM25Index:
    """Okapi BM25 over the same terms the mock model reads (lower-cased, stemmed).

    Scores are summed one term after another in sorted order, whichever
    documents a search scores, so each score is the same float, bit for bit,
    that a plain loop over the formula adds; ties go to the later document
    (the most recent statement of a fact wins)."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.lengths = array("q")  # terms per document
        self.total_length = 0
        self.postings: dict[str, Posting] = {}  # appended to in place
        self.last_scored = 0  # documents the last search scored (benchmarks read it)

    def __deepcopy__(self, memo: dict[int, Any]) -> BM25Index:
        # Arrays of numbers copy whole (a fork is made per probe; deepcopy
        # would go through the postings value by value).
        copied = BM25Index(self.k1, self.b)
        copied.lengths = self.lengths[:]
        copied.total_length = self.total_length
        copied.postings = {term: posting.copy() for term, posting in self.postings.items()}
        memo[id(self)] = copied
        return copied

    def add(self, text: str) -> int:
        doc = len(self.lengths)
        counts = Counter(terms(text))
        length = sum(counts.values())
        postings = self.postings
        for term, tf in counts.items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = Posting()
            posting.docs.append(doc)
            posting.tfs.append(tf)
            if tf > posting.max_tf:
                posting.max_tf = tf
            if length < posting.min_length:
                posting.min_length = length
        self.lengths.append(length)
        self.total_length += length
        return doc

    def search(self, query: str, k: int) -> list[int]:
        import numpy as np

        self.last_scored = 0
        found = [p for term in sorted(set(terms(query))) if (p := self.postings.get(term))]
        if not found or k < 1:
            return []
        search = _Search(self, found, np.frombuffer(self.lengths, dtype=np.int64))
        ranked = search.few_documents(k)
        if ranked is None:
            scores = search.every_document()
            docs = np.flatnonzero(scores > 0)
            ranked = docs, scores[docs]
        self.last_scored = len(ranked[0])
        return _best(*ranked, k)


class _Search:
    """One query against the index as it stands: its terms (in summing
    order), their idfs and the documents' length norms."""

    def __init__(self, index: BM25Index, found: list[Posting], lengths: Docs) -> None:
        import numpy as np

        self.n = n = len(index.lengths)
        self.k1, self.b = index.k1, index.b
        self.average = index.total_length / n or 1.0
        self.lengths = lengths
        self.found = found
        self.docs = [np.frombuffer(p.docs, dtype=np.int64) for p in found]
        self.tfs = [np.frombuffer(p.tfs, dtype=np.float64) for p in found]
        self.idfs = [math.log(1 + (n - len(d) + 0.5) / (len(d) + 0.5)) for d in self.docs]
        # A term frequency of 0 scores exactly 0.0 (0 / a positive norm), so a
        # document without the term can be scored as having it 0 times.
        self.zero_where_absent = self.k1 > 0 and 0 <= self.b < 1

    def _norm(self, lengths: Any) -> Any:
        # k1 * (1 - b + b * length / average), the same operations for an
        # array of lengths as for one.
        return self.k1 * (1 - self.b + self.b * lengths / self.average)

    def _term_score(self, idf: float, tfs: Any, norms: Any) -> Any:
        return idf * tfs * (self.k1 + 1) / (tfs + norms)

    def every_document(self) -> Scores:
        import numpy as np

        scores = np.zeros(self.n)
        norms = None  # every document's norm, once a common term needs most of them
        for posting, docs, tfs, idf in zip(self.found, self.docs, self.tfs, self.idfs, strict=True):
            if len(docs) < _FEW * self.n:  # a rare term: its own documents' norms
                scores[docs] += self._term_score(idf, tfs, self._norm(self.lengths[docs]))
                continue
            if norms is None:
                norms = self._norm(self.lengths)
            if len(docs) == self.n:  # in every document: documents 0 to n - 1, in order
                scores += self._term_score(idf, tfs, norms)
            elif self.zero_where_absent:  # 0.0 for a document without the term
                scores += self._term_score(idf, posting.dense_tfs(self.n), norms)
            else:
                scores[docs] += self._term_score(idf, tfs, norms[docs])
        return scores

    def scores_of(self, chosen: Docs) -> Scores:
        """The scores of ``chosen`` (ascending document numbers)."""
        import numpy as np

        # Scores by document number; only the chosen ones are read back.
        scores = np.zeros(self.n)
        norms = self._norm(self.lengths[chosen])
        for docs, tfs, idf in zip(self.docs, self.tfs, self.idfs, strict=True):
            if len(docs) == self.n:  # documents 0 to n - 1: a document is its own position
                scores[chosen] += self._term_score(idf, tfs[chosen], norms)
            elif len(docs) <= _SCATTER * len(chosen):  # cheaper to score all its documents
                scores[docs] += self._term_score(idf, tfs, self._norm(self.lengths[docs]))
            else:  # look each chosen document up among the term's
                at = np.minimum(np.searchsorted(docs, chosen), len(docs) - 1)
                has = docs[at] == chosen
                scores[chosen[has]] += self._term_score(idf, tfs[at[has]], norms[has])
        return scores[chosen]

    def bound(self, i: int) -> float:
        """The most term ``i`` can add to any document's score: the score is
        larger for a larger term frequency and for a shorter document."""
        posting = self.found[i]
        return float(self._term_score(self.idfs[i], posting.max_tf, self._norm(posting.min_length)))

    def few_documents(self, k: int) -> tuple[Docs, Scores] | None:
        """The documents of the weightiest terms and their scores, once the
        other terms together cannot lift any other document to the k-th best
        of them; None when that would take too many documents."""
        import numpy as np

        bounds = [self.bound(i) for i in range(len(self.found))]
        weightiest = sorted(range(len(bounds)), key=bounds.__getitem__, reverse=True)
        chosen: Docs = np.empty(0, dtype=np.int64)
        for taken, i in enumerate(weightiest, 1):
            chosen = _union(chosen, self.docs[i])
            if len(chosen) > _FEW * self.n:
                return None
            rest = math.fsum(bounds[j] for j in weightiest[taken:])
            if len(chosen) < k and rest:
                continue
            scores = self.scores_of(chosen)
            if not rest:  # every term's documents: nothing is left out
                return chosen, scores
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            if rest * (1 + _ROUNDING_SLACK) < kth:
                return chosen, scores
        return None  # not reached: after the last term nothing is left out


def _union(first: Docs, second: Docs) -> Docs:
    """Two ascending arrays of distinct document numbers, merged."""
    import numpy as np

    if not len(first):
        return second
    merged = np.concatenate((first, second))
    merged.sort(kind="stable")  # a merge of two sorted runs
    return merged[np.concatenate(([True], merged[1:] != merged[:-1]))]


def _best(docs: Docs, scores: Scores, k: int) -> list[int]:
    """The ``k`` best documents, best first, ties to the later document."""
    import numpy as np

    if len(docs) > k:
        # Only documents scoring at least the k-th best can be among the k
        # best: partitioning finds that score without sorting them all.
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        docs, scores = docs[keep], scores[keep]
    order = np.lexsort((docs, scores))  # by score, then document number
    return [int(doc) for doc in docs[order[::-1][:k]]]
