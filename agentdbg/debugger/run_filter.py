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

from agentdbg.debugger.filters import Filter
from agentdbg.debugger.find import Query, iter_matches


def iter_matching_steps(run: Any, flt: Filter, cancel: threading.Event | None = None, first: int = 1,
                        stop: int | None = None, progress: Callable[[int], None] | None = None) -> Iterator[int | None]:
    """The numbers of the steps ``first``..``stop`` (default: those known now) that ``flt``
    matches, in order; yields None and ends when ``cancel`` is set (``find.iter_matches``)."""
    return iter_matches(run, Query(str(flt), filter=flt), cancel, first, stop, progress=progress)


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
