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
"""

from __future__ import annotations

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


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1_000, 10_000, 100_000])
