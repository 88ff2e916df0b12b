"""Semantic memory behind the ANN index: the linear scan's results on small stores, recall@k
on larger ones, the plan option, and a clear error without the library."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from agentdbg.engine import events as ev
from agentdbg.engine.memory import SemanticMemory, TieredMemory, semantic_memory
from agentdbg.engine.memory_embedding import HashedBagOfWords
from agentdbg.plans import PlanError, parse_plan

ROOT = Path(__file__).resolve().parents[1]
RESEARCH = ROOT / "sample_plans" / "memory_research.toml"

pytest.importorskip("usearch", reason="the ANN index needs agentdbg[ann] (usearch)")
from agentdbg.engine.memory_ann import AnnSemanticMemory, AnnUnavailable  # noqa: E402

TOPICS = ["catalog", "loans", "observatory", "comet", "telescope", "archive", "founded", "Milan",
          "Florence", "Naples", "Palermo", "asteroid", "tower", "volcano", "spectra", "disk"]


def turn(i: int) -> str:
    a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
    return f"Thought: look up {a} {i}\nAction: search[{a} {b} {i}]\nObservation: entry {i} says {a} and {b}."


def both(items: list[tuple[str, list[float]]]) -> tuple[SemanticMemory, AnnSemanticMemory]:
    linear, ann = SemanticMemory(), AnnSemanticMemory()
    for text, vector in items:
        linear.add(text, vector)
        ann.add(text, vector)
    return linear, ann


def test_dense_vectors_give_exactly_the_linear_scans_top_k():
    rng = random.Random(3)
    linear, ann = both([(f"item {i}", [rng.gauss(0, 1) for _ in range(24)]) for i in range(400)])
    for _ in range(60):
        query = [rng.gauss(0, 1) for _ in range(24)]
        for k in (1, 5, 12):
            assert ann.recall(query, k) == linear.recall(query, k)  # texts, scores to the bit, order


def test_bag_of_words_turns_give_the_linear_scans_scores_and_ties_rank_by_order_stored():
    embed = HashedBagOfWords(64)
    linear, ann = both([(turn(i), embed(turn(i))) for i in range(1500)])
    same = 0
    for j in range(80):
        query = embed(turn(10_000 + 37 * j))
        expected, got = linear.recall(query, 5), ann.recall(query, 5)
        assert [r.score for r in got] == [r.score for r in expected]
        for earlier, later in zip(got, got[1:], strict=False):  # the tie rule holds within the answer
            assert (earlier.score, -earlier.index) > (later.score, -later.index)
        same += got == expected
    assert same >= 76  # a tie at the k-th place may pick another item of the same score


def test_recall_at_5_is_at_least_0_95_on_a_larger_store():
    embed = HashedBagOfWords(64)
    count = 12_000
    texts = [turn(i) for i in range(count)]
    vectors = [embed(text) for text in texts]
    ann = AnnSemanticMemory()
    ann.add_many(texts, vectors)
    linear = SemanticMemory()
    for text, vector in zip(texts, vectors, strict=True):
        linear.add(text, vector)
    hits = total = 0
    for j in range(40):
        query = embed(turn(count + 7919 * j))
        kth = linear.recall(query, 5)[-1].score
        hits += sum(r.score >= kth for r in ann.recall(query, 5))
        total += 5
    assert hits / total >= 0.95


def test_recall_at_5_is_at_least_0_95_on_distinct_clustered_vectors():
    rng = random.Random(11)
    centres = [[rng.gauss(0, 1) for _ in range(32)] for _ in range(60)]

    def near() -> list[float]:
        centre = rng.choice(centres)
        return [x + rng.gauss(0, 0.5) for x in centre]

    vectors = [near() for _ in range(6000)]
    ann = AnnSemanticMemory()
    ann.add_many([str(i) for i in range(len(vectors))], vectors)
    linear = SemanticMemory()
    for i, vector in enumerate(vectors):
        linear.add(str(i), vector)
    assert len(ann._members) == 6000  # all distinct: one node each
    hits = 0
    for _ in range(40):
        query = near()
        kth = linear.recall(query, 5)[-1].score
        hits += sum(r.score >= kth for r in ann.recall(query, 5))
    assert hits / 200 >= 0.95


def test_identical_vectors_share_a_node_and_come_back_in_the_order_stored():
    ann = AnnSemanticMemory()
    for i in range(10):
        ann.add(f"copy {i}", [1.0, 2.0, 0.0])
    ann.add("other", [0.0, 0.0, 1.0])
    assert [r.text for r in ann.recall([1.0, 2.0, 0.0], 3)] == ["copy 0", "copy 1", "copy 2"]
    assert len(ann) == 11 and ann.texts[-1] == "other"


def test_edge_cases_match_the_linear_scan():
    linear, ann = both([("a", [1.0, 0.0]), ("zero", [0.0, 0.0]), ("b", [0.0, 1.0])])
    for query, k in (([0.0, 0.0], 2), ([1.0, 1.0], 3), ([1.0, 0.0], 10), ([1.0, 0.0], 0)):
        assert ann.recall(query, k) == linear.recall(query, k)
    with pytest.raises(ValueError, match="3 dimensions, this memory holds 2"):
        ann.add("c", [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        ann.add("nan", [float("nan"), 1.0])
    ann.clear()
    assert ann.recall([1.0], 2) == [] and len(ann) == 0
    ann.add("one dimension now", [2.0])
    assert ann.recall([1.0], 1)[0].text == "one dimension now"


def research_plan(index: str) -> str:
    return RESEARCH.read_text(encoding="utf-8").replace("[memory]\n", f'[memory]\nindex = "{index}"\n', 1)


def test_the_research_plan_runs_the_same_with_the_ann_index():
    linear = parse_plan(research_plan("linear")).run()
    ann = parse_plan(research_plan("ann")).run()
    assert ann.answer == linear.answer == "108 years"
    header = ann.events[0]
    assert isinstance(header, ev.RunStart) and header.memory["semantic"]["index"] == "ann"
    assert "index" not in linear.events[0].memory["semantic"]  # the default says nothing
    assert [e for e in ann.events[1:]] == [e for e in linear.events[1:]]


def test_an_unknown_index_is_a_plan_error_with_its_line():
    with pytest.raises(PlanError, match=r":\d+: \[memory\]: index must be linear or ann, got 'hnsw'"):
        parse_plan(research_plan("hnsw"), "research.toml")
    with pytest.raises(ValueError, match="index must be one of linear, ann"):
        TieredMemory(index="faiss")


def test_without_usearch_the_ann_index_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "usearch.index", None)  # import fails as if not installed
    with pytest.raises(AnnUnavailable, match=r'pip install "agentdbg\[ann\]"'):
        semantic_memory("ann")
    with pytest.raises(PlanError, match=r"research.toml:\d+: \[memory\]: index = \"ann\" needs the usearch library"):
        parse_plan(research_plan("ann"), "research.toml")
    assert parse_plan(research_plan("linear")).run().answer == "108 years"  # the linear scan needs nothing
