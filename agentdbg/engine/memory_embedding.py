"""Embeddings for semantic recall: the interface, and a deterministic offline default.

An embedder is any callable ``text -> sequence of floats`` whose vectors all have the same
length; give it a ``name`` attribute and the run header says which one was used. The
default, ``HashedBagOfWords``, needs no model and no network: it counts the words of a
text into a fixed number of buckets chosen by a stable hash (CRC-32, never Python's
``hash()``, which changes from one process to the next). Texts that share words get a
high cosine similarity; it knows nothing of synonyms or meaning. A real embedding model
plugs in as ``lambda text: model.encode(text).tolist()``.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Sequence

Embedder = Callable[[str], Sequence[float]]

_WORD = re.compile(r"\w+")

# Words too common to say what a text is about; counting them would make every turn alike.
STOPWORDS = frozenset(
    """a about after also an and any are as at be been before but by can could did do does
    done for from get got had has have he her here his how i if in into is it its let me
    more my need next no not now of on one or our out she so than that the their them then
    there these they this those to too up us was we were what when where which while who why
    will with would you your""".split()
)


def words(text: str) -> list[str]:
    """The words of ``text`` that count for similarity: lowercased, stopwords left out."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


class HashedBagOfWords:
    """Word counts hashed into ``dim`` buckets (bucket = CRC-32 of the UTF-8 word mod
    ``dim``). Deterministic across processes and machines; two different words can share
    a bucket, which slightly raises the similarity of unrelated texts (fewer collisions
    with a larger ``dim``, at a proportional cost per recall)."""

    def __init__(self, dim: int = 256):
        if dim < 1:
            raise ValueError(f"embedding dimension must be at least 1, got {dim}")
        self.dim = dim
        self.name = f"hashed-bag-of-words-{dim}"

    def __call__(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for word in words(text):
            vector[zlib.crc32(word.encode("utf-8")) % self.dim] += 1.0
        return vector

    def __repr__(self) -> str:
        return f"HashedBagOfWords(dim={self.dim})"


def normalized(vector: Sequence[float]) -> tuple[float, ...]:
    """``vector`` scaled to length 1 (a zero vector stays zero: it is similar to nothing)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return tuple(0.0 for _ in vector)
    return tuple(x / norm for x in vector)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity in [-1, 1]; 0.0 when either vector is zero."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    return sum(x * y for x, y in zip(normalized(a), normalized(b), strict=True))


def embedder_name(embedder: Embedder) -> str:
    """A stable name for the run header (never a repr with a memory address)."""
    name = getattr(embedder, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(embedder, "__qualname__", type(embedder).__name__)
