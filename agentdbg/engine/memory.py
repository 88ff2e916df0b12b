"""Tiered memory: what the policy is shown when the whole transcript no longer fits.

Three tiers, combined by ``TieredMemory.context()`` into the prompt the policy sees:

- the recent buffer (``BufferMemory``): the last ``max_turns`` turns, verbatim;
- the rolling summary: turns pushed out of the buffer, folded into a short text by a
  summarizer (``memory_summary``);
- semantic memory (``SemanticMemory``): turns pushed out of the buffer, kept whole with an
  embedding, and brought back by cosine similarity to the newest turn (``memory_embedding``).

Every change is an event: ``memory_recall`` for what recall brought back before the policy
was asked, ``memory_update`` for the turn added, the turns evicted (oldest first), the new
summary and the texts stored. The state of every tier at step N is therefore a function of
the run's events up to step N (``agentdbg.model.state.MemoryState`` replays it).
``docs/memory.md`` describes the tiers, the defaults and how to plug real models in.
"""

from __future__ import annotations

import heapq
import math
import operator
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.memory_embedding import (
    Embedder,
    HashedBagOfWords,
    embedder_name,
    normalized,
)
from agentdbg.engine.memory_summary import (
    ExtractiveSummarizer,
    Summarizer,
    summarize_memory,
    summarizer_name,
)
from agentdbg.text import collapse_space

RECALL_QUERIES = ("last_turn", "task", "task_and_last_turn")
SCORE_DIGITS = 4  # recall scores are written rounded, so events stay short and stable

SUMMARY_HEADER = "Summary of earlier steps:"
RECALL_HEADER = "Recalled from memory:"
RECENT_HEADER = "Recent steps:"


class BufferMemory:
    """The most recent ``max_turns`` turns, oldest first. Adding a turn to a full buffer
    evicts the oldest; ``add`` returns what it evicted so the caller can record it."""

    def __init__(self, max_turns: int):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be an integer of at least 1, got {max_turns!r}")
        self.max_turns = max_turns
        self._turns: deque[str] = deque()

    def add(self, turn: str) -> list[str]:
        """Append ``turn``; return the turns evicted to make room, oldest first."""
        self._turns.append(turn)
        evicted = []
        while len(self._turns) > self.max_turns:
            evicted.append(self._turns.popleft())
        return evicted

    @property
    def turns(self) -> list[str]:
        return list(self._turns)

    @property
    def newest(self) -> str | None:
        return self._turns[-1] if self._turns else None

    def clear(self) -> None:
        self._turns.clear()

    def __len__(self) -> int:
        return len(self._turns)


@dataclass(frozen=True)
class Recalled:
    """One recall result: the stored text, its cosine similarity to the query and its
    position in the store (the tie-breaker: the earlier stored ranks first)."""

    text: str
    score: float
    index: int


def _scorer(query: Sequence[float]) -> Callable[[Sequence[float]], float]:
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
    (see ``docs/memory.md`` for measured times; past ~10k items per recall, use an
    approximate nearest-neighbour index instead). Vectors are normalised when added and
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
        score = _scorer(query)
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


_DEFAULT: Any = object()


class TieredMemory:
    """Recent buffer + rolling summary + semantic recall, as the agent loop's memory.

    - ``max_turns``: size of the recent buffer.
    - ``summarizer``: folds evicted turns into the summary (``None``: no summary tier);
      default ``ExtractiveSummarizer()``.
    - ``embedder``: text -> vector for semantic memory; default ``HashedBagOfWords()``.
    - ``recall_k``: how many stored turns recall brings back (0: no semantic tier).
    - ``min_score``: results scoring at or below it are left out (0.0: keep only texts
      that share something with the query).
    - ``recall_query``: what recall searches with: ``last_turn`` (the newest turn in the
      buffer; the task line before there is one), ``task``, or ``task_and_last_turn``.

    A turn evicted from the buffer is folded into the summary and stored in semantic
    memory; the buffer therefore never duplicates what recall brings back.
    """

    def __init__(
        self,
        max_turns: int = 4,
        summarizer: Summarizer | None = _DEFAULT,
        embedder: Embedder | None = _DEFAULT,
        recall_k: int = 2,
        min_score: float = 0.0,
        recall_query: str = "last_turn",
    ):
        if recall_k < 0:
            raise ValueError(f"recall_k must be 0 or more, got {recall_k}")
        if recall_query not in RECALL_QUERIES:
            raise ValueError(f"recall_query must be one of {', '.join(RECALL_QUERIES)}, got {recall_query!r}")
        if not -1.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be between -1 and 1, got {min_score}")
        self.buffer = BufferMemory(max_turns)
        self.summarizer = ExtractiveSummarizer() if summarizer is _DEFAULT else summarizer
        if embedder is _DEFAULT or (embedder is None and recall_k > 0):
            embedder = HashedBagOfWords()
        self.embedder = embedder
        self.recall_k = recall_k
        self.min_score = min_score
        self.recall_query = recall_query
        self.semantic: SemanticMemory | None = SemanticMemory() if recall_k > 0 else None
        self.summary = ""
        self.recalled: list[dict[str, Any]] = []  # what the latest build_context recalled, as emitted
        self.query: str | None = None  # what it searched with (None: no recall ran)

    # --- the Memory protocol the loop calls -----------------------------------------------

    def settings(self) -> dict[str, Any]:
        """The run header's ``memory`` object."""
        summary: dict[str, Any] | None = None
        if self.summarizer is not None:
            summary = {"summarizer": summarizer_name(self.summarizer)}
            max_chars = getattr(self.summarizer, "max_chars", None)
            if isinstance(max_chars, int):
                summary["max_chars"] = max_chars
        semantic = None
        if self.semantic is not None:
            semantic = {
                "embedder": embedder_name(self.embedder) if self.embedder is not None else None,
                "k": self.recall_k,
                "min_score": self.min_score,
                "query": self.recall_query,
            }
        return {"kind": "tiered", "max_turns": self.buffer.max_turns, "summary": summary, "semantic": semantic}

    def _embed(self, text: str) -> Sequence[float]:
        if self.embedder is None:  # not so: semantic memory always comes with an embedder
            raise ValueError("semantic memory without an embedder")
        return self.embedder(text)

    def reset(self) -> None:
        self.buffer.clear()
        if self.semantic is not None:
            self.semantic.clear()
        self.summary = ""
        self.recalled = []
        self.query = None

    def build_context(self, task_line: str, step: int) -> tuple[str, list[ev.Event]]:
        """Recall for this step (a ``memory_recall`` event when recall ran), then the prompt."""
        self.recalled, self.query = [], None
        found: list[ev.Event] = []
        if self.semantic is not None and len(self.semantic) > 0:
            self.query = self._query_text(task_line)
            results = self.semantic.recall(self._embed(self.query), self.recall_k)
            self.recalled = [
                {"text": r.text, "score": round(r.score, SCORE_DIGITS)} for r in results if r.score > self.min_score
            ]
            found.append(ev.MemoryRecall(step=step, query=self.query, results=[dict(r) for r in self.recalled]))
        return self.context(task_line), found

    def record_turn(self, turn: str, step: int) -> list[ev.Event]:
        """Add the step's turn; evict, fold and store what no longer fits (one ``memory_update``)."""
        evicted = self.buffer.add(turn)
        new_summary = None
        stored: list[str] = []
        if evicted and self.summarizer is not None:
            folded = summarize_memory(evicted, self.summarizer, self.summary)
            if folded != self.summary:
                self.summary = new_summary = folded
        if evicted and self.semantic is not None:
            for text in evicted:
                self.semantic.add(text, self._embed(text))
                stored.append(text)
        return [ev.MemoryUpdate(step=step, added=[turn], evicted=evicted, summary=new_summary, stored=stored)]

    # --- what the policy sees --------------------------------------------------------------

    def context(self, task_line: str = "") -> str:
        """The prompt: the task line, the summary, what was recalled, then the recent turns.

        Until something has been evicted or recalled this is exactly the full transcript
        (task line, then every turn), so a memory changes nothing while the run still fits."""
        return render_context(task_line, self.summary, self.recalled, self.buffer.turns)

    def tiers(self) -> dict[str, Any]:
        """Every tier's current content, for comparison and display."""
        return {
            "buffer": self.buffer.turns,
            "summary": self.summary,
            "semantic": self.semantic.texts if self.semantic is not None else [],
            "recalled": [dict(r) for r in self.recalled],
        }

    def _query_text(self, task_line: str) -> str:
        newest = self.buffer.newest
        if self.recall_query == "task" or newest is None:
            return task_line
        if self.recall_query == "last_turn":
            return newest
        return f"{task_line}\n{newest}"

    def __repr__(self) -> str:
        return f"TieredMemory({self.settings()!r})"


def render_context(task_line: str, summary: str, recalled: Sequence[dict[str, Any]], recent: Sequence[str]) -> str:
    """The prompt a tiered memory shows its policy, from the tiers alone: so the debugger
    can rebuild it from events (the tiers before a step, and that step's recall)."""
    parts = [task_line] if task_line else []
    if summary:
        parts += [SUMMARY_HEADER, summary]
    if recalled:
        parts.append(RECALL_HEADER)
        parts += [f"- {collapse_space(r['text'])}" for r in recalled]
    if recent and (summary or recalled):
        parts.append(RECENT_HEADER)
    parts += recent
    return "\n".join(parts)


def replay_semantic_texts(events: Iterable[ev.Event]) -> list[str]:
    """The texts semantic memory holds after ``events``: every ``stored`` list, in order."""
    texts: list[str] = []
    for event in events:
        if isinstance(event, ev.MemoryUpdate):
            texts.extend(event.stored)
    return texts
