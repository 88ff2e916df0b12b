"""How long semantic recall's linear scan takes as semantic memory grows.

Fills a SemanticMemory with N synthetic turns (1k, 10k, 100k by default) and times, in the
same process:

  baseline        one engine step of the library example without memory (what a step
                  costs anyway: policy, parse, tool, events)
  embed           the default embedder on one turn (HashedBagOfWords, 256 buckets)
  recall N        one recall (k=2) over N items of the default embedder's 256 dimensions
  dense N         the same with 768-dimension vectors, the size of a typical real embedding
                  model (deterministic pseudo-random vectors; embedding time not included)

and prints milliseconds per call and the ratio to the baseline. No assertion: figures to
watch (docs/memory.md quotes them).

    python benchmarks/memory_recall.py [N ...]

``--ann`` compares the linear scan with the ANN index (``[memory] index = "ann"``, needs
``agentdbg[ann]``) at 100k and 1M items by default, on N synthetic turns embedded by the
default embedder at ``--dim`` buckets (64 by default: a 1M-item store stays near a GB),
both filled from the same vectors, and prints for each:

  build           seconds to store N items (the linear scan: ``add`` one by one; the index:
                  ``add_many`` with one thread, the graph ``add`` one by one would build)
  memory          bytes held for the vectors (and the graph), texts not included
  query           milliseconds per recall (k=5) and the ratio linear / ann
  recall@5        over 200 queries, against an exact numpy scan; tie-aware: a result
                  counts when it scores at least the exact 5th best (bag-of-words vectors
                  tie a lot, and any of the tied items is a right answer)

``--dense`` does the same on distinct clustered vectors (a real embedding model's kind),
100k items by default: every item is a node of the graph.

    python benchmarks/memory_recall.py --ann [--dense] [--dim D] [N ...]
"""

from __future__ import annotations

import gc
import random
import sys
import time
from collections.abc import Callable

from agentdbg.engine.agent import ReActAgent
from agentdbg.engine.memory import SemanticMemory
from agentdbg.engine.memory_embedding import HashedBagOfWords
from agentdbg.examples.library import QUESTION, good_policy, registry

TOPICS = ["catalog", "loans", "observatory", "comet", "telescope", "archive", "founded", "Milan",
          "Florence", "Naples", "Palermo", "asteroid", "tower", "volcano", "spectra", "disk"]


def synthetic_turn(i: int) -> str:
    a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
    return (f"Thought: look up {a} {i}\nAction: search[{a} {b} {i}]\n"
            f"Observation: entry {i} says {a} and {b} were recorded in {1700 + i % 300}.")


def per_call(work: Callable[[], object], repeat: int) -> float:
    """Seconds per call, the best of three rounds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            work()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def report(label: str, seconds: float, baseline: float) -> None:
    print(f"{label:<16} {seconds * 1000:10.3f} ms   {seconds / baseline:10.1f}x baseline")


def engine_step_seconds() -> float:
    agent = ReActAgent(good_policy, registry(), max_steps=6)

    def run() -> None:
        agent.run(QUESTION)

    return per_call(run, 200) / 4  # the good policy answers in 4 steps


def main(sizes: list[int]) -> None:
    baseline = engine_step_seconds()
    report("baseline", baseline, baseline)
    embed = HashedBagOfWords()
    query_text = synthetic_turn(123_457)
    report("embed", per_call(lambda: embed(query_text), 2000), baseline)
    query = embed(query_text)
    for size in sizes:
        memory = SemanticMemory()
        for i in range(size):
            text = synthetic_turn(i)
            memory.add(text, embed(text))
        repeat = max(3, 20_000 // size)
        report(f"recall {size:,}", per_call(lambda m=memory: m.recall(query, 2), repeat), baseline)
        del memory
    rng = random.Random(7)
    dense_query = [rng.gauss(0, 1) for _ in range(768)]
    for size in sizes:
        memory = SemanticMemory()
        for i in range(size):
            memory.add(str(i), [rng.gauss(0, 1) for _ in range(768)])
        repeat = max(3, 20_000 // size)
        report(f"dense {size:,}", per_call(lambda m=memory: m.recall(dense_query, 2), repeat), baseline)
        del memory


def linear_bytes(memory: SemanticMemory) -> int:
    """The linear scan's vectors: each a packed array, plus the list holding them."""
    vectors = memory._vectors
    return sys.getsizeof(vectors) + sum(sys.getsizeof(v) for v in vectors)


def recall_at_k(found: list, exact_scores, k: int) -> float:
    """Tie-aware recall: results scoring at least the exact k-th best, over k."""
    kth = sorted(exact_scores, reverse=True)[k - 1] if len(exact_scores) >= k else min(exact_scores)
    return sum(1 for r in found if r.score >= kth - 1e-12) / k


def turns_and_queries(size: int, dim: int, queries: int):
    """N synthetic turns embedded by the default embedder, and queries: later turns."""
    import numpy as np

    embed = HashedBagOfWords(dim)
    matrix = np.array([embed(synthetic_turn(i)) for i in range(size)], dtype=np.float64)
    return matrix, [embed(synthetic_turn(size + 7919 * j)) for j in range(queries)]


def dense_and_queries(size: int, dim: int, queries: int):
    """N distinct vectors in clusters (a real model's embeddings are all distinct and
    bunched by topic): 1,000 random centres plus noise; queries drawn the same way."""
    import numpy as np

    rng = np.random.default_rng(7)
    centres = rng.standard_normal((1000, dim))
    matrix = centres[rng.integers(0, 1000, size)] + 0.5 * rng.standard_normal((size, dim))
    asked = centres[rng.integers(0, 1000, queries)] + 0.5 * rng.standard_normal((queries, dim))
    return matrix, asked.tolist()


def ann_comparison(sizes: list[int], dim: int, k: int = 5, queries: int = 200, dense: bool = False) -> None:
    import numpy as np

    from agentdbg.engine.memory_ann import AnnSemanticMemory

    what = "clustered dense vectors" if dense else "the default embedder"
    print(f"\nlinear scan vs ann index: {what} at {dim} dimensions, k={k}")
    for size in sizes:
        start = time.perf_counter()
        matrix, asked = (dense_and_queries if dense else turns_and_queries)(size, dim, queries)
        texts = [f"turn {i}" for i in range(size)]
        print(f"-- {size:,} items (making them: {time.perf_counter() - start:.1f} s, not counted)")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)

        linear = SemanticMemory()
        start = time.perf_counter()
        for text, row in zip(texts, matrix, strict=True):
            linear.add(text, row.tolist())
        linear_build = time.perf_counter() - start
        linear_mem = linear_bytes(linear)
        sample = asked[: max(3, min(queries, 2_000_000 // size))]
        start = time.perf_counter()
        linear_found = [linear.recall(q, k) for q in sample]
        linear_query = (time.perf_counter() - start) / len(sample)
        del linear
        gc.collect()

        ann = AnnSemanticMemory()
        start = time.perf_counter()
        ann.add_many(texts, matrix, threads=1)
        ann_build = time.perf_counter() - start
        ann_mem = ann.memory_bytes()
        ann.recall(asked[0], k)  # warm
        start = time.perf_counter()
        ann_found = [ann.recall(q, k) for q in asked]
        ann_query = (time.perf_counter() - start) / len(asked)

        recalls = []
        for q, found in zip(asked, ann_found, strict=True):
            qv = np.asarray(q, dtype=np.float64)
            qv = qv / (np.linalg.norm(qv) or 1.0)
            recalls.append(recall_at_k(found, unit @ qv, k))
        same = sum([r.score for r in a] == [r.score for r in b]
                   for a, b in zip(linear_found, ann_found, strict=False))
        print(f"   build     linear {linear_build:8.1f} s      ann {ann_build:8.1f} s "
              f"({ann_build / linear_build:.1f}x the linear scan's)")
        print(f"   memory    linear {linear_mem / 2**20:8.0f} MB     ann {ann_mem / 2**20:8.0f} MB "
              f"({len(ann._members):,} distinct vectors: graph nodes)")
        print(f"   query     linear {linear_query * 1000:8.2f} ms     ann {ann_query * 1000:8.3f} ms "
              f"({linear_query / ann_query:,.0f}x faster)")
        print(f"   recall@{k}  ann {sum(recalls) / len(recalls):.4f} (min {min(recalls):.2f}) over {len(asked)} queries; "
              f"same scores as the linear scan on {same}/{len(linear_found)}")
        del ann, matrix, unit
        gc.collect()


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--ann" in args:
        args.remove("--ann")
        dim = 64
        if "--dim" in args:
            at = args.index("--dim")
            dim = int(args[at + 1])
            del args[at:at + 2]
        dense = "--dense" in args
        if dense:
            args.remove("--dense")
        ann_comparison([int(arg) for arg in args] or ([100_000] if dense else [100_000, 1_000_000]), dim, dense=dense)
    else:
        main([int(arg) for arg in args] or [1_000, 10_000, 100_000])
