"""Semantic memory behind an approximate nearest-neighbour index (HNSW, from usearch).

``AnnSemanticMemory`` has the interface of ``memory_semantic.SemanticMemory`` (``add``, ``recall``,
``texts``, ``clear``, ``len``) and gives its results on small stores: the index only
proposes candidates; each candidate is then scored exactly (float64 cosine, as the linear
scan scores it) and ranked with the same tie rule (equal scores: the earlier stored
first). On large stores a true neighbour can be missed (recall@k is measured in
``benchmarks/memory_recall.py``); what is returned is always scored exactly.

usearch is an optional dependency (``pip install "agentdbg[ann]"``); without it,
building this memory raises ``AnnUnavailable`` with the command that installs it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from agentdbg.engine.memory_embedding import normalized
from agentdbg.engine.memory_semantic import Recalled, dot_scorer

INSTALL_HINT = 'pip install "agentdbg[ann]"'
# Candidates asked of the index per result wanted, and at least this many: re-scored
# exactly, they give the linear scan's top k, ties included unless more turns tie at the
# k-th score than there are candidates.
OVERSAMPLE = 4
MIN_CANDIDATES = 32
EXPANSION_SEARCH = 128  # HNSW beam width at query time (usearch's default: 64)
EXPANSION_ADD = 64  # and while adding (usearch's default: 128; half the build time, see docs/memory.md)
CONNECTIVITY = 32  # graph edges per node (16 loses clustered turns: recall 0.98, some queries 0)


class AnnUnavailable(ImportError):
    """The ANN index was asked for, and usearch (or numpy) is not installed."""


def _load() -> tuple[Any, Any]:
    try:
        import numpy
        from usearch.index import Index
    except ImportError as exc:
        raise AnnUnavailable(
            f"the ann memory index needs the usearch library ({exc.name or 'usearch'} is not installed): "
            f"{INSTALL_HINT}, or use index = \"linear\"") from None
    return numpy, Index


def ann_available() -> bool:
    try:
        _load()
    except AnnUnavailable:
        return False
    return True


class AnnSemanticMemory:
    """Texts with embeddings, recalled through an HNSW index (cosine metric).

    Items are numbered in the order stored (0, 1, 2...), which is also the tie rule.
    Identical vectors (frequent with a bag of words: turns that use the same words) share
    one node of the graph, which keeps the graph small and connected; a node lists its
    items in the order stored. Vectors are normalised when added and kept in the index as
    float64, so exact re-scoring reads them back instead of keeping a second copy."""

    name = "ann"

    def __init__(self, expansion_search: int = EXPANSION_SEARCH, expansion_add: int = EXPANSION_ADD,
                 connectivity: int = CONNECTIVITY):
        self._np, self._Index = _load()
        if expansion_search < 1 or expansion_add < 1 or connectivity < 2:
            raise ValueError("expansion_search and expansion_add must be at least 1, connectivity at least 2")
        self.expansion_search = expansion_search
        self.expansion_add = expansion_add
        self.connectivity = connectivity
        self._texts: list[str] = []
        self._members: list[list[int]] = []  # node -> its items, in the order stored
        self._node_of: dict[bytes, int] = {}  # a vector's digest -> its node
        self._index: Any = None
        self.dim: int | None = None

    def _new_index(self, dim: int) -> Any:
        # threads=1 everywhere: one thread adds in a fixed order, so the graph (and every
        # recall) is the same from one run to the next.
        return self._Index(ndim=dim, metric="cos", dtype="f64", connectivity=self.connectivity,
                           expansion_add=self.expansion_add, expansion_search=self.expansion_search)

    def _check_dim(self, dim: int) -> None:
        if self.dim is None:
            self.dim = dim
            self._index = self._new_index(dim)
        elif dim != self.dim:
            raise ValueError(f"embedding has {dim} dimensions, this memory holds {self.dim}")

    def _place(self, unit: Any) -> int | None:
        """Give the item about to be stored to the node of its vector; a new vector gets a
        new node, returned (the caller adds it to the index)."""
        digest = hashlib.blake2b(unit.tobytes(), digest_size=16).digest()
        item = len(self._texts)
        node = self._node_of.get(digest)
        if node is not None:
            self._members[node].append(item)
            return None
        node = self._node_of[digest] = len(self._members)
        self._members.append([item])
        return node

    def add(self, text: str, embedding: Sequence[float]) -> None:
        vector = tuple(float(x) for x in embedding)
        if not vector:
            raise ValueError("an embedding needs at least one dimension")
        self._check_dim(len(vector))
        if not all(math.isfinite(x) for x in vector):
            raise ValueError("an embedding must contain finite numbers only")
        unit = self._np.asarray(normalized(vector), dtype=self._np.float64)
        node = self._place(unit)
        if node is not None:
            self._index.add(node, unit, threads=1)
        self._texts.append(text)

    def add_many(self, texts: Sequence[str], embeddings: Any, threads: int = 1) -> None:
        """Add many items at once (a 2-D array, one row per text), for loading a large store:
        the items ``add`` would store, one call to the index. ``threads=1`` inserts in the order stored, one at a time, as ``add`` does; more
        threads build faster, a graph that may differ from one run to the next."""
        np = self._np
        matrix = np.asarray(embeddings, dtype=np.float64)
        if matrix.ndim != 2 or len(matrix) != len(texts) or matrix.shape[1] == 0:
            raise ValueError("add_many needs one non-empty row of floats per text")
        self._check_dim(matrix.shape[1])
        if not np.isfinite(matrix).all():
            raise ValueError("an embedding must contain finite numbers only")
        # Normalised as ``add`` normalises (math.fsum), so the doubles are the same to the
        # bit; a slice at a time, so a million rows never become Python floats all at once.
        unit = np.empty_like(matrix)
        for at in range(0, len(matrix), 65536):
            rows = matrix[at:at + 65536].tolist()
            unit[at:at + len(rows)] = [normalized(row) for row in rows]
        matrix = unit
        new_nodes, new_rows = [], []
        for row, text in enumerate(texts):
            node = self._place(matrix[row])
            self._texts.append(text)
            if node is not None:
                new_nodes.append(node)
                new_rows.append(row)
        if new_nodes:
            self._index.add(np.asarray(new_nodes, dtype=np.uint64), matrix[new_rows], threads=threads)

    def recall(self, query_embedding: Sequence[float], k: int) -> list[Recalled]:
        """The ``k`` stored texts most similar to the query, best first, scored exactly;
        equal scores rank by the order stored (earlier first)."""
        if k <= 0 or not self._texts:
            return []
        np = self._np
        query = np.asarray(normalized([float(x) for x in query_embedding]), dtype=np.float64)
        if len(query) != self.dim:
            raise ValueError(f"query has {len(query)} dimensions, this memory holds {self.dim}")
        if not query.any():
            # A zero query is similar to nothing: every score is 0, and the tie rule
            # picks the first stored, as the linear scan does.
            return [Recalled(self._texts[i], 0.0, i) for i in range(min(k, len(self._texts)))]
        wanted = min(len(self._members), max(k * OVERSAMPLE, MIN_CANDIDATES))
        found = self._index.search(query, wanted, threads=1)
        nodes = np.asarray(found.keys, dtype=np.uint64)
        if not len(nodes):
            return []
        # Scored by the linear scan's own arithmetic, on the very doubles it would hold:
        # the same scores to the last bit, so ties break the same way.
        score = dot_scorer(query.tolist())
        vectors = self._index.get(nodes, dtype=np.float64)
        ranked: list[tuple[float, int]] = []
        for node, vector in zip(nodes.tolist(), vectors, strict=True):
            negative = -score(vector.tolist())
            ranked.extend((negative, item) for item in self._members[node][:k])
        ranked.sort()
        return [Recalled(self._texts[item], -negative, item) for negative, item in ranked[:k]]

    @property
    def texts(self) -> list[str]:
        return list(self._texts)

    def clear(self) -> None:
        self._texts.clear()
        self._members.clear()
        self._node_of.clear()
        self._index = None
        self.dim = None

    def memory_bytes(self) -> int:
        """What the index holds in memory (vectors and graph), as usearch reports it."""
        return int(self._index.memory_usage) if self._index is not None else 0

    def __len__(self) -> int:
        return len(self._texts)
