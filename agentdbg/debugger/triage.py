"""Finding the broken runs of a file fast: a run's summary (outcome, verdict, steps,
errors, repeats, tokens) and what makes a run *failing*.

A run fails when one of its steps matches ``FAILING_FILTER``: an error (a tool error, a
parse error or an error observation), a guard that stopped it, or a grader's verdict that
it is wrong; the same as ``agentdbg check --fail-on error,guard,wrong``. Whether a run
fails is read from its counters (``Tally``: a trace's last checkpoint and a fast fold of
the steps after it), and where it first fails by the filter, reading steps only up to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentdbg.debugger.filters import parse_filter
from agentdbg.debugger.run_filter import first_matching_step
from agentdbg.engine.verdicts import Verdict
from agentdbg.model.runs import last_tally
from agentdbg.model.state import Tally

FAILING_FILTER = "~error | ~tripped | ~wrong"
FAILING_CONDITIONS = ("error", "guard", "wrong")  # check --fail-on names of the same
CANCEL_EVERY = 16  # runs between looks at the cancel flag
PROGRESS_EVERY = 256  # runs between progress calls


@dataclass(frozen=True)
class RunSummary:
    """One row of the run list."""

    steps: int
    outcome: str | None  # None: no end recorded (yet)
    answered: bool
    verdict: Verdict | None
    errors: int
    repeats: int
    tokens: int | None
    guard: str | None  # the guard that stopped the run, if one did
    complete: bool
    title: str = ""  # the run's name (or its task), for sorting by name

    @property
    def failing(self) -> bool:
        return bool(self.errors) or self.guard is not None or (self.verdict is not None and self.verdict.correct is False)

    @property
    def verdict_word(self) -> str:
        return "" if self.verdict is None else self.verdict.word

    def why_failing(self) -> str:
        reasons = []
        if self.errors:
            reasons.append(f"{self.errors:,} error{'s' if self.errors != 1 else ''}")
        if self.guard is not None:
            reasons.append(f"stopped by {self.guard}")
        if self.verdict is not None and self.verdict.correct is False:
            reasons.append("judged wrong")
        return ", ".join(reasons)


def run_tally(run: Any) -> Tally:
    """The counters after the run's last step known now: from a trace's last checkpoint
    and a fast fold of the steps after it, or folded from the run's states."""
    return last_tally(run)


def summarize(run: Any) -> RunSummary:
    tally = run_tally(run)
    end = run.end
    tokens = tally.tokens[0] if isinstance(tally.tokens, list) and tally.tokens else None
    return RunSummary(
        steps=run.step_count,
        outcome=end.outcome if end is not None else tally.outcome,
        answered=(end.answer if end is not None else tally.answer) is not None,
        verdict=Verdict.read(end.verdict if end is not None else tally.verdict),
        errors=tally.error_count,
        repeats=tally.repeat_count,
        tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        guard=tally.trips[-1][1] if tally.trips else None,
        complete=bool(run.complete),
        title=getattr(run, "title", "") or run.info.name or run.info.task,
    )


class Summaries:
    """Summaries of a document's runs, made when first asked for and kept (a run still
    growing is summarised again each time). Safe to use from a worker thread."""

    LIMIT = 200_000  # summaries kept; past it the oldest go

    def __init__(self, runs: Sequence[Any]):
        self.runs = runs
        self._kept: dict[int, RunSummary] = {}
        self._lock = threading.Lock()

    def get(self, index: int) -> RunSummary | None:
        """The summary of run ``index``; None when the run cannot be read."""
        with self._lock:
            kept = self._kept.get(index)
        if kept is not None:
            return kept
        try:
            summary = summarize(self.runs[index])
        except (IndexError, ValueError, OSError):
            return None
        if summary.complete:
            with self._lock:
                if len(self._kept) >= self.LIMIT:
                    self._kept.pop(next(iter(self._kept)))
                self._kept[index] = summary
        return summary

    def known(self, index: int) -> RunSummary | None:
        """The summary if it was made already (never reads the file)."""
        with self._lock:
            return self._kept.get(index)


def first_failing_step(run: Any, cancel: threading.Event | None = None) -> int | None:
    """Where ``run`` first fails (None when it does not, or ``cancel`` is set)."""
    return first_matching_step(run, parse_filter(FAILING_FILTER), cancel)


def next_failing_run(summaries: Summaries, start: int, direction: int, cancel: threading.Event | None = None,
                     progress: Callable[[int], None] | None = None) -> int | None:
    """The nearest failing run after (``direction`` 1) or before (-1) run ``start``;
    None when there is none that way, or ``cancel`` is set."""
    index = start + direction
    looked = 0
    while 0 <= index < len(summaries.runs):
        looked += 1
        if looked % CANCEL_EVERY == 0:
            if cancel is not None and cancel.is_set():
                return None
            if progress is not None and looked % PROGRESS_EVERY == 0:
                progress(index + 1)
        summary = summaries.get(index)
        if summary is not None and summary.failing:
            return index
        index += direction
    return None
