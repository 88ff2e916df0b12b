"""Semantic memory by linear scan: texts with embeddings, recalled by cosine similarity.

``SemanticMemory`` scores every stored vector (exact); ``memory_ann.AnnSemanticMemory`` has
the same interface over an HNSW index and scores its candidates with ``dot_scorer``, the
arithmetic used here, so both give the same scores to the bit. ``TieredMemory``
(``memory.py``) holds one of them as its semantic tier.
"""

from __future__ import annotations

import heapq
import math
import operator
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentdbg.engine.memory_embedding import normalized


@dataclass(frozen=True)
class Recalled:
    """One recall result: the stored text, its cosine similarity to the query and its
    position in the store (the tie-breaker: the earlier stored ranks first)."""

    text: str
    score: float
    index: int


def dot_scorer(query: Sequence[float]) -> Callable[[Sequence[float]], float]:
    """The dot product with ``query``. A sparse query (a bag of words has a few non-zero
    buckets) multiplies only its non-zero dimensions: the same sum without its zero terms,
    so the same scores, several times faster."""
    nonzero = [i for i, x in enumerate(query) if x != 0.0]
    if len(nonzero) * 4 >= len(query):
        return lambda vector: sum(map(operator.mul, query, vector))
    if not nonzero:
        return lambda vector: 0.0
    if len(nonzero) == 1:
        [only] = nonzero
        weight = query[only]
        return lambda vector: weight * vector[only]
    weights = [query[i] for i in nonzero]
    pick = operator.itemgetter(*nonzero)
    return lambda vector: sum(map(operator.mul, weights, pick(vector)))


class SemanticMemory:
    """Texts with embeddings, recalled by cosine similarity.

    ``recall`` scans every stored vector: exact, simple, and fine for thousands of items
    (see ``docs/memory.md`` for measured times; past ~10k items per recall, use the
    approximate nearest-neighbour index, ``semantic_memory("ann")``). Vectors are normalised when added and
    kept as packed doubles (8 bytes a dimension), so a recall costs one dot product per item."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._vectors: list[array[float]] = []  # unit vectors, 8 bytes a dimension
        self.dim: int | None = None

    def add(self, text: str, embedding: Sequence[float]) -> None:
        vector = tuple(float(x) for x in embedding)
        if not vector:
            raise ValueError("an embedding needs at least one dimension")
        if self.dim is None:
            self.dim = len(vector)
        elif len(vector) != self.dim:
            raise ValueError(f"embedding has {len(vector)} dimensions, this memory holds {self.dim}")
        if not all(math.isfinite(x) for x in vector):
            raise ValueError("an embedding must contain finite numbers only")
        self._texts.append(text)
        self._vectors.append(array("d", normalized(vector)))

    def recall(self, query_embedding: Sequence[float], k: int) -> list[Recalled]:
        """The ``k`` stored texts most similar to the query, best first; equal scores rank
        by the order they were stored (earlier first), so results are deterministic."""
        if k <= 0 or not self._vectors:
            return []
        query = normalized([float(x) for x in query_embedding])
        if len(query) != self.dim:
            raise ValueError(f"query has {len(query)} dimensions, this memory holds {self.dim}")
        score = dot_scorer(query)
        best = heapq.nsmallest(k, ((-score(vector), index) for index, vector in enumerate(self._vectors)))
        return [Recalled(self._texts[index], -negative, index) for negative, index in best]

    @property
    def texts(self) -> list[str]:
        """Every stored text, in the order stored."""
        return list(self._texts)

    def clear(self) -> None:
        self._texts.clear()
        self._vectors.clear()
        self.dim = None

    def __len__(self) -> int:
        return len(self._texts)
