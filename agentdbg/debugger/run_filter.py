"""Which runs of a file a filter picks, for the run list: a run is picked when one of its
steps matches. ``~wrong`` and ``~correct`` match the step where a graded run ended, so in
the run list they pick exactly the runs judged wrong or correct.

A scan reads steps (over a trace file a block of steps at a time: steps the filter's
byte test rules out are passed without being decoded, as a continue does) and looks at
``cancel`` every few hundred steps. A step that cannot be read does not match.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentdbg.debugger.candidates import candidate_steps
from agentdbg.debugger.filters import Filter
from agentdbg.model.runs import Advancing, RawSteps, StepBlocks

CANCEL_EVERY = 256  # steps between looks at the cancel flag
PROGRESS_EVERY = 4096  # steps between progress calls


def iter_matching_steps(run: Any, flt: Filter, cancel: threading.Event | None = None, first: int = 1,
                        stop: int | None = None, progress: Callable[[int], None] | None = None) -> Iterator[int | None]:
    """The numbers of the steps ``first``..``stop`` (default: those known now) that ``flt``
    matches, in order; yields None and ends when ``cancel`` is set."""
    match = flt.predicate()
    last = run.step_count if stop is None else stop
    may_match = (flt.block_test() if isinstance(run, StepBlocks) and not isinstance(run, Advancing)
                 else None)
    if may_match is not None:  # a trace file: a few MiB of steps at a time
        yield from _matching_in_blocks(run, match, may_match, cancel, first, last, progress)
        return
    cannot_match = flt.bytes_test()
    step_bytes = run.step_bytes if cannot_match is not None and isinstance(run, RawSteps) else None
    for step in range(first, last + 1):
        if step % CANCEL_EVERY == 0:
            if cancel is not None and cancel.is_set():
                yield None
                return
            if progress is not None and step % PROGRESS_EVERY == 0:
                progress(step)
        try:
            if step_bytes is not None and cannot_match is not None:
                data = step_bytes(step)
                if data is not None and not cannot_match(step, data):
                    continue
            if match(run.record(step)):
                yield step
        except (IndexError, ValueError, OSError):
            continue


def _matching_in_blocks(run: Any, match: Callable[[Any], bool], may_match: Callable[[Any], set[int]],
                        cancel: threading.Event | None, first: int, last: int,
                        progress: Callable[[int], None] | None) -> Iterator[int | None]:
    """``iter_matching_steps`` over a trace file's blocks of steps: only the steps the
    filter's block test cannot rule out are decoded (``agentdbg.trace.scan``)."""
    for step in candidate_steps(run, may_match, first, last, cancel=cancel, progress=progress):
        if step is None:
            yield None
            return
        try:
            if match(run.record(step)):
                yield step
        except (IndexError, ValueError, OSError):
            continue


def run_matches(run: Any, flt: Filter, cancel: threading.Event | None = None) -> bool | None:
    """Does a step of ``run`` (of those known now) match? None when ``cancel`` is set."""
    for step in iter_matching_steps(run, flt, cancel):
        return None if step is None else True
    return False


def first_matching_step(run: Any, flt: Filter, cancel: threading.Event | None = None) -> int | None:
    """The first step of ``run`` that ``flt`` matches (None: none, or cancelled)."""
    for step in iter_matching_steps(run, flt, cancel):
        return step
    return None


def matching_runs(runs: Sequence[Any], flt: Filter, cancel: threading.Event | None = None,
                  progress: Callable[[int], None] | None = None) -> list[int] | None:
    """The indexes of the runs ``flt`` picks; None when ``cancel`` is set meanwhile.
    ``progress(n)`` is told after each run looked at."""
    picked = []
    for index, run in enumerate(runs):
        found = run_matches(run, flt, cancel)
        if found is None or (cancel is not None and cancel.is_set()):
            return None
        if found:
            picked.append(index)
        if progress is not None:
            progress(index + 1)
    return picked
