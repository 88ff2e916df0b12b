"""The memory tiers: recent buffer, rolling summary, semantic recall, and their combination."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import zlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentdbg.engine import events as ev
from agentdbg.engine.agent import ReActAgent
from agentdbg.engine.memory import (
    RECALL_HEADER,
    RECENT_HEADER,
    SUMMARY_HEADER,
    BufferMemory,
    SemanticMemory,
    TieredMemory,
    replay_semantic_texts,
)
from agentdbg.engine.memory_embedding import (
    HashedBagOfWords,
    cosine,
    embedder_name,
    normalized,
    words,
)
from agentdbg.engine.memory_summary import (
    ExtractiveSummarizer,
    TruncatingSummarizer,
    shorten,
    summarize_memory,
    turn_gist,
)
from agentdbg.engine.mock_tools import calculator, table_lookup
from agentdbg.engine.policies import CallablePolicy, ScriptedOutputs
from agentdbg.engine.tools import ToolRegistry

# --- BufferMemory ---------------------------------------------------------------------------


def test_buffer_keeps_the_newest_turns_and_evicts_the_oldest_first():
    buffer = BufferMemory(3)
    evicted = [buffer.add(f"turn {i}") for i in range(1, 6)]
    assert evicted == [[], [], [], ["turn 1"], ["turn 2"]]
    assert buffer.turns == ["turn 3", "turn 4", "turn 5"]
    assert buffer.newest == "turn 5"
    assert len(buffer) == 3


def test_buffer_of_one_turn_evicts_on_every_add_after_the_first():
    buffer = BufferMemory(1)
    assert buffer.add("a") == []
    assert buffer.add("b") == ["a"]
    assert buffer.add("b") == ["b"]  # identical turns are still distinct turns
    assert buffer.turns == ["b"]


def test_buffer_clear_and_empty_newest():
    buffer = BufferMemory(2)
    buffer.add("a")
    buffer.clear()
    assert buffer.turns == [] and buffer.newest is None


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "3"])
def test_buffer_size_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="max_turns"):
        BufferMemory(bad)


# --- the rolling summary --------------------------------------------------------------------


def test_summarize_memory_hands_the_previous_summary_and_the_turns_to_the_summarizer():
    calls = []

    def summarizer(previous, turns):
        calls.append((previous, list(turns)))
        return previous + "|" + "+".join(turns)

    assert summarize_memory(["a", "b"], summarizer, previous="S") == "S|a+b"
    assert calls == [("S", ["a", "b"])]


def test_summarize_memory_without_turns_keeps_the_summary_and_does_not_call():
    def summarizer(previous, turns):
        raise AssertionError("must not be called")

    assert summarize_memory([], summarizer, previous="kept") == "kept"


def test_summarize_memory_rejects_a_summarizer_that_returns_no_text():
    with pytest.raises(TypeError, match="must return text"):
        summarize_memory(["a"], lambda previous, turns: None)


@pytest.mark.parametrize(
    ("turn", "gist"),
    [
        ("Thought: add\nAction: calc[5 - 3]\nObservation: 2", "calc[5 - 3] -> 2"),
        ('Thought: t\nAction: search\nAction Input: {"q": "x"}\nObservation: found\nit', 'search {"q": "x"} -> found it'),
        ("Thought 1: t\nAction 1: Search[Milan]\nObservation 1: a city", "Search[Milan] -> a city"),
        ("not an action\nObservation: ERROR: invalid format", "not an action -> ERROR: invalid format"),
        ("Thought: only thinking", "only thinking"),
    ],
)
def test_turn_gist_keeps_the_action_and_what_it_returned(turn, gist):
    assert turn_gist(turn) == gist


def test_extractive_summary_folds_turns_into_lines_and_drops_the_oldest_beyond_its_size():
    summarizer = ExtractiveSummarizer(max_chars=40, line_chars=100)
    turn = "Thought: t\nAction: {}\nObservation: {}".format
    summary = summarize_memory([turn("a[1]", "one")], summarizer)
    assert summary == "a[1] -> one"
    summary = summarize_memory([turn("b[2]", "two"), turn("c[3]", "three")], summarizer, summary)
    assert summary == "a[1] -> one\nb[2] -> two\nc[3] -> three"  # 39 characters: all fit
    summary = summarize_memory([turn("d[4]", "four")], summarizer, summary)
    assert summary == "b[2] -> two\nc[3] -> three\nd[4] -> four"  # the oldest line dropped out
    assert len(summary) <= 40


def test_extractive_summary_cuts_long_lines():
    summarizer = ExtractiveSummarizer(max_chars=400, line_chars=20)
    summary = summarizer("", ["Action: read[x]\nObservation: " + "word " * 30])
    assert summary == "read[x] -> word w..."
    assert len(summary) == 20


def test_truncating_summary_keeps_the_newest_characters():
    summarizer = TruncatingSummarizer(max_chars=12)
    assert summarizer("", ["ab\ncd"]) == "ab cd"
    folded = summarizer("ab cd", ["efghijklmnop"])
    assert folded == "...hijklmnop"
    assert len(folded) == 12


def test_shorten_marks_what_it_cut():
    assert shorten("abcdef", 6) == "abcdef"
    assert shorten("abcdefgh", 6) == "abc..."
    assert shorten("abcdefgh", 2) == "ab"


@pytest.mark.parametrize("cls", [ExtractiveSummarizer, TruncatingSummarizer])
def test_summarizer_sizes_must_be_positive(cls):
    with pytest.raises(ValueError):
        cls(0)


# --- embeddings -----------------------------------------------------------------------------


def test_hashed_bag_of_words_counts_words_into_crc32_buckets():
    embed = HashedBagOfWords(dim=64)
    vector = embed("The Brera Observatory, Brera!")
    assert len(vector) == 64
    brera = zlib.crc32(b"brera") % 64
    observatory = zlib.crc32(b"observatory") % 64
    assert vector[brera] == 2.0
    assert vector[observatory] == 1.0
    assert sum(vector) == 3.0  # "the" is a stopword
    assert words("The Brera Observatory, Brera!") == ["brera", "observatory", "brera"]


def test_hashed_bag_of_words_is_the_same_in_every_process():
    # Python's hash() of a string changes with PYTHONHASHSEED; the embedder must not.
    code = "import json; from agentdbg.engine.memory_embedding import HashedBagOfWords; print(json.dumps(HashedBagOfWords(32)('Il Gattopardo copies on loan')))"
    outputs = set()
    for seed in ("1", "2", "random"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": seed, "PATH": ""})
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == HashedBagOfWords(32)("Il Gattopardo copies on loan")


def test_embedder_names_are_stable():
    assert embedder_name(HashedBagOfWords(128)) == "hashed-bag-of-words-128"

    def my_model(text):
        return [1.0]

    assert embedder_name(my_model) == "test_embedder_names_are_stable.<locals>.my_model"
    with pytest.raises(ValueError):
        HashedBagOfWords(0)


def test_cosine_and_normalized():
    assert cosine([1, 0], [2, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 3]) == 0.0
    assert cosine([1, 1], [-1, -1]) == pytest.approx(-1.0)
    assert cosine([0, 0], [1, 1]) == 0.0
    assert normalized([3, 4]) == pytest.approx((0.6, 0.8))
    with pytest.raises(ValueError, match="different lengths"):
        cosine([1], [1, 2])


# --- SemanticMemory -------------------------------------------------------------------------


def test_recall_ranks_by_cosine_similarity_best_first():
    memory = SemanticMemory()
    memory.add("east", [1.0, 0.0])
    memory.add("north-east", [1.0, 1.0])
    memory.add("north", [0.0, 1.0])
    memory.add("west", [-1.0, 0.0])
    results = memory.recall([1.0, 0.2], k=4)
    assert [r.text for r in results] == ["east", "north-east", "north", "west"]
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert results[0].score == pytest.approx(1 / math.sqrt(1.04))
    assert results[-1].score == pytest.approx(-1 / math.sqrt(1.04))
    assert [r.text for r in memory.recall([0.0, 1.0], k=2)] == ["north", "north-east"]


def test_recall_breaks_ties_by_the_order_items_were_stored():
    memory = SemanticMemory()
    memory.add("c: stored first", [0.0, 2.0])
    memory.add("a: same direction, longer", [0.0, 5.0])
    memory.add("b: unrelated", [1.0, 0.0])
    memory.add("d: same again", [0.0, 1.0])
    results = memory.recall([0.0, 1.0], k=3)
    assert [r.text for r in results] == ["c: stored first", "a: same direction, longer", "d: same again"]
    assert results[0].score == results[1].score == results[2].score == 1.0
    # a tie at the cut: the earlier stored item wins the last place
    assert [r.text for r in memory.recall([0.0, 1.0], k=1)] == ["c: stored first"]


def test_recall_of_identical_texts_keeps_insertion_order():
    embed = HashedBagOfWords(64)
    memory = SemanticMemory()
    for name in ("first", "second", "third"):
        memory.add(f"{name}", embed("catalog Il Gattopardo"))
    assert [r.text for r in memory.recall(embed("Gattopardo"), 3)] == ["first", "second", "third"]


vectors = st.lists(st.sampled_from([0, 0, 0, 1, -1, 2]), min_size=16, max_size=16)
STORED = [[1, 0] * 8, [0, 1] * 8, [2, 0] * 8, [1, 1] * 8, [0] * 16, [1] + [0] * 15]


@settings(max_examples=300)
@given(st.lists(vectors, min_size=1, max_size=12), vectors, st.integers(1, 14))
@example(STORED, [1, 1] + [0] * 14, 6)  # sparse query, several non-zero dimensions
@example(STORED, [0, 2] + [0] * 14, 6)  # one non-zero dimension
@example(STORED, [0] * 16, 3)  # the zero query
@example(STORED, [1, -1] * 8, 6)  # dense query
def test_recall_is_the_exact_cosine_ranking_with_ties_in_stored_order(stored, query, k):
    # Small integer vectors: many exact ties, many sparse queries (the fast path) and dense ones.
    memory = SemanticMemory()
    for i, vector in enumerate(stored):
        memory.add(f"item {i}", vector)
    expected = sorted(range(len(stored)), key=lambda i: (-cosine(query, stored[i]), i))[:k]
    results = memory.recall(query, k)
    assert [r.index for r in results] == expected
    assert [r.score for r in results] == [cosine(query, stored[i]) for i in expected]


def test_sparse_and_dense_queries_score_alike():
    embed = HashedBagOfWords(64)
    memory = SemanticMemory()
    texts = ["Brera founded 1764", "Arcetri founded 1872", "Ceres discovered 1801", "comet of 1858"]
    for text in texts:
        memory.add(text, embed(text))
    sparse = embed("when was Brera founded")  # 3 of 64 buckets: the sparse path
    dense = [x + 1e-300 if x == 0.0 else x for x in sparse]  # no zero left: the plain dot product
    assert [(r.text, r.score) for r in memory.recall(sparse, 4)] == [
        (r.text, pytest.approx(r.score, abs=1e-12)) for r in memory.recall(dense, 4)]
    assert memory.recall(sparse, 1)[0].text == "Brera founded 1764"


def test_recall_edge_cases():
    memory = SemanticMemory()
    assert memory.recall([1.0], 3) == []  # empty
    memory.add("x", [1.0, 0.0])
    memory.add("zero", [0.0, 0.0])
    assert memory.recall([1.0, 0.0], 0) == []
    results = memory.recall([1.0, 0.0], 10)  # k beyond the store: everything
    assert [(r.text, r.score) for r in results] == [("x", 1.0), ("zero", 0.0)]
    assert [r.score for r in memory.recall([0.0, 0.0], 2)] == [0.0, 0.0]
    with pytest.raises(ValueError, match="dimensions"):
        memory.recall([1.0, 0.0, 0.0], 1)
    with pytest.raises(ValueError, match="dimensions"):
        memory.add("y", [1.0])
    with pytest.raises(ValueError, match="finite"):
        memory.add("nan", [math.nan, 1.0])
    with pytest.raises(ValueError, match="at least one"):
        memory.add("empty", [])
    assert memory.texts == ["x", "zero"] and len(memory) == 2
    memory.clear()
    assert len(memory) == 0 and memory.dim is None


# --- TieredMemory ---------------------------------------------------------------------------


def turn(i: int, fact: str = "") -> str:
    return f"Thought: step {i}\nAction: look[item {i}]\nObservation: {fact or f'value {i}'}"


def test_context_is_the_plain_transcript_until_something_is_evicted():
    memory = TieredMemory(max_turns=3)
    task = "Question: what?"
    assert memory.build_context(task, 1) == (task, [])
    memory.record_turn(turn(1), 1)
    memory.record_turn(turn(2), 2)
    prompt, found = memory.build_context(task, 3)
    assert found == []  # nothing stored yet, so no recall ran
    assert prompt == "\n".join([task, turn(1), turn(2)])


def test_record_turn_reports_added_evicted_summary_and_stored():
    memory = TieredMemory(max_turns=2, summarizer=ExtractiveSummarizer(200))
    assert memory.record_turn(turn(1), 1) == [ev.MemoryUpdate(step=1, added=[turn(1)])]
    memory.record_turn(turn(2), 2)
    [update] = memory.record_turn(turn(3), 3)
    assert update == ev.MemoryUpdate(
        step=3, added=[turn(3)], evicted=[turn(1)], summary="look[item 1] -> value 1", stored=[turn(1)]
    )
    [update] = memory.record_turn(turn(4), 4)
    assert update.evicted == [turn(2)]
    assert update.summary == "look[item 1] -> value 1\nlook[item 2] -> value 2"
    assert memory.tiers() == {
        "buffer": [turn(3), turn(4)],
        "summary": update.summary,
        "semantic": [turn(1), turn(2)],
        "recalled": [],
    }


def test_unchanged_summary_is_not_repeated_in_the_event():
    memory = TieredMemory(max_turns=1, summarizer=lambda previous, turns: "constant")
    memory.record_turn("a", 1)
    assert memory.record_turn("b", 2)[0].summary == "constant"
    assert memory.record_turn("c", 3)[0].summary is None
    assert memory.summary == "constant"


def test_combined_context_shows_summary_recall_and_recent_turns_in_that_order():
    memory = TieredMemory(max_turns=2, summarizer=ExtractiveSummarizer(200), recall_k=1)
    memory.record_turn(turn(1, "Brera was founded in 1764"), 1)
    memory.record_turn(turn(2, "Palermo dates from 1790"), 2)
    memory.record_turn(turn(3, "Which year was Brera founded?"), 3)
    prompt, found = memory.build_context("Question: how old?", 4)
    recalled_line = "- " + " ".join(turn(1, "Brera was founded in 1764").split())
    assert prompt.splitlines() == [
        "Question: how old?",
        SUMMARY_HEADER,
        "look[item 1] -> Brera was founded in 1764",
        RECALL_HEADER,
        recalled_line,
        RECENT_HEADER,
        *turn(2, "Palermo dates from 1790").splitlines(),
        *turn(3, "Which year was Brera founded?").splitlines(),
    ]
    [recall] = found
    assert recall.step == 4
    assert recall.query == turn(3, "Which year was Brera founded?")
    assert [r["text"] for r in recall.results] == [turn(1, "Brera was founded in 1764")]
    assert memory.recalled == recall.results
    assert memory.context("Question: how old?") == prompt


def test_recall_queries_and_min_score():
    memory = TieredMemory(max_turns=1, summarizer=None, recall_k=5, recall_query="task")
    memory.record_turn("apples and pears", 1)
    memory.record_turn("cars and trains", 2)
    memory.record_turn("pears again", 3)
    _, [recall] = memory.build_context("Question: trains?", 4)
    assert recall.query == "Question: trains?"
    assert [r["text"] for r in recall.results] == ["cars and trains"]  # score 0 items left out
    memory.recall_query = "task_and_last_turn"
    _, [recall] = memory.build_context("Question: trains?", 5)
    assert recall.query == "Question: trains?\npears again"
    assert [r["text"] for r in recall.results] == ["apples and pears", "cars and trains"]
    memory.min_score = 0.99
    _, [recall] = memory.build_context("Question: trains?", 6)
    assert recall.results == []  # recall ran and found nothing good enough: still an event
    assert memory.recalled == []
    assert "Recalled" not in memory.context("Q")


def test_recall_scores_are_rounded_in_events():
    memory = TieredMemory(max_turns=1, summarizer=None, embedder=lambda text: [1.0, len(text)], recall_k=1)
    memory.record_turn("abc", 1)
    memory.record_turn("x", 2)
    _, [recall] = memory.build_context("Q", 3)
    assert recall.results == [{"text": "abc", "score": round(cosine([1.0, 3.0], [1.0, 1.0]), 4)}]


def test_tiers_can_be_switched_off():
    memory = TieredMemory(max_turns=1, summarizer=None, recall_k=0)
    memory.record_turn("a", 1)
    [update] = memory.record_turn("b", 2)
    assert update == ev.MemoryUpdate(step=2, added=["b"], evicted=["a"])
    assert memory.build_context("Q", 3) == ("Q\nb", [])
    assert memory.settings() == {"kind": "tiered", "max_turns": 1, "summary": None, "semantic": None}


def test_settings_name_the_parts():
    memory = TieredMemory(max_turns=3, summarizer=TruncatingSummarizer(120), embedder=HashedBagOfWords(64),
                          recall_k=2, min_score=0.1, recall_query="task")
    assert memory.settings() == {
        "kind": "tiered",
        "max_turns": 3,
        "summary": {"summarizer": "truncate", "max_chars": 120},
        "semantic": {"embedder": "hashed-bag-of-words-64", "k": 2, "min_score": 0.1, "query": "task"},
    }
    assert json.loads(json.dumps(memory.settings())) == memory.settings()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"recall_k": -1}, "recall_k"), ({"recall_query": "all"}, "recall_query"), ({"min_score": 2.0}, "min_score"),
     ({"max_turns": 0}, "max_turns")],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TieredMemory(**kwargs)


def test_reset_empties_every_tier():
    memory = TieredMemory(max_turns=1, recall_k=1)
    for i in range(3):
        memory.record_turn(turn(i), i + 1)
    memory.build_context("Q", 4)
    memory.reset()
    assert memory.tiers() == {"buffer": [], "summary": "", "semantic": [], "recalled": []}
    assert memory.query is None


def test_replay_semantic_texts_collects_stored_lists():
    events = [ev.MemoryUpdate(step=1, added=["a"]), ev.MemoryUpdate(step=2, added=["b"], evicted=["a"], stored=["a"]),
              ev.Thought(step=2, text="x"), ev.MemoryUpdate(step=3, stored=["b", "c"])]
    assert replay_semantic_texts(events) == ["a", "b", "c"]


# --- in the loop ----------------------------------------------------------------------------


def test_the_policy_is_shown_the_memory_context_and_events_follow_the_schema_order():
    prompts: list[str] = []
    outputs = [f"Thought: look {i}\nAction: calc[{i} + 0]" for i in range(1, 5)] + ["Final Answer: done"]

    def policy(prompt):
        prompts.append(prompt)
        return outputs[len(prompts) - 1]

    memory = TieredMemory(max_turns=2, recall_k=1)
    agent = ReActAgent(CallablePolicy(policy), ToolRegistry([calculator("calc")]), max_steps=10, memory=memory)
    trace = agent.run("count")
    assert trace.outcome.answer == "done"
    assert prompts[0] == "Question: count"
    assert prompts[1] == "Question: count\nThought: look 1\nAction: calc[1 + 0]\nObservation: 1"
    assert SUMMARY_HEADER in prompts[3] and "calc[1 + 0] -> 1" in prompts[3]
    assert "Thought: look 1" not in prompts[3].split(RECENT_HEADER)[1]
    start = trace.events[0]
    assert isinstance(start, ev.RunStart) and start.memory == memory.settings()
    step4 = [e.type for e in trace.steps[3].events]
    assert step4 == ["step", "memory_recall", "thought", "action", "observation", "memory_update", "guards"]


def test_memory_bounds_what_each_step_costs_in_tokens():
    outputs = [f"Thought: read page {i}\nAction: read[page {i}]" for i in range(1, 13)] + ["Final Answer: read"]
    pages = {f"page {i}": f"page {i} says " + "lorem ipsum " * 20 for i in range(1, 13)}

    def cost(memory):
        agent = ReActAgent(ScriptedOutputs(outputs), ToolRegistry([table_lookup("read", pages)]), max_steps=20,
                           memory=memory)
        steps = agent.run("read").steps
        return [next(e for e in s.events if isinstance(e, ev.GuardCounters)).step_tokens for s in steps]

    without = cost(None)
    with_memory = cost(TieredMemory(max_turns=2, summarizer=ExtractiveSummarizer(200), recall_k=1))
    assert without == sorted(without) and without[-1] > 4 * without[1]  # the transcript keeps growing
    assert max(with_memory[4:]) - min(with_memory[4:]) < 40  # bounded once the buffer is full
    assert with_memory[-1] < without[-1] / 3
