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

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.memory_embedding import (
    Embedder,
    HashedBagOfWords,
    embedder_name,
)

# Re-exported: these lived here before the linear scan had a module of its own.
from agentdbg.engine.memory_semantic import Recalled as Recalled
from agentdbg.engine.memory_semantic import SemanticMemory as SemanticMemory
from agentdbg.engine.memory_semantic import dot_scorer as dot_scorer
from agentdbg.engine.memory_summary import (
    ExtractiveSummarizer,
    Summarizer,
    summarize_memory,
    summarizer_name,
)
from agentdbg.text import collapse_space

RECALL_QUERIES = ("last_turn", "task", "task_and_last_turn")
INDEXES = ("linear", "ann")  # how semantic memory finds its nearest turns
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


def semantic_memory(index: str = "linear") -> SemanticMemory:
    """An empty semantic memory searched by ``index``: ``linear`` or ``ann`` (raises
    ``memory_ann.AnnUnavailable``, an ImportError, when usearch is not installed)."""
    if index == "ann":
        from agentdbg.engine.memory_ann import AnnSemanticMemory

        return AnnSemanticMemory()  # type: ignore[return-value]  # the same interface
    if index != "linear":
        raise ValueError(f"index must be one of {', '.join(INDEXES)}, got {index!r}")
    return SemanticMemory()


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
    - ``index``: ``linear`` (default: ``SemanticMemory``, an exact scan) or ``ann`` (an
      HNSW index, ``memory_ann.AnnSemanticMemory``; needs ``agentdbg[ann]``).

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
        index: str = "linear",
    ):
        if recall_k < 0:
            raise ValueError(f"recall_k must be 0 or more, got {recall_k}")
        if recall_query not in RECALL_QUERIES:
            raise ValueError(f"recall_query must be one of {', '.join(RECALL_QUERIES)}, got {recall_query!r}")
        if not -1.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be between -1 and 1, got {min_score}")
        if index not in INDEXES:
            raise ValueError(f"index must be one of {', '.join(INDEXES)}, got {index!r}")
        self.buffer = BufferMemory(max_turns)
        self.summarizer = ExtractiveSummarizer() if summarizer is _DEFAULT else summarizer
        if embedder is _DEFAULT or (embedder is None and recall_k > 0):
            embedder = HashedBagOfWords()
        self.embedder = embedder
        self.recall_k = recall_k
        self.min_score = min_score
        self.recall_query = recall_query
        self.index = index
        self.semantic: SemanticMemory | None = semantic_memory(index) if recall_k > 0 else None
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
            if self.index != "linear":  # said only when not the default: older headers stay as they were
                semantic["index"] = self.index
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
