"""Which runs of a file a filter picks, for the run list: a run is picked when one of its
steps matches. ``~wrong`` and ``~correct`` match the step where a graded run ended, so in
the run list they pick exactly the runs judged wrong or correct.

A scan reads steps (over a trace file, steps the filter's byte test rules out are passed
without being decoded, as a continue does) and looks at ``cancel`` every few hundred
steps. A step that cannot be read does not match.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from agentdbg.debugger.filters import Filter
from agentdbg.model.runs import RawSteps

CANCEL_EVERY = 256  # steps between looks at the cancel flag


def run_matches(run: Any, flt: Filter, cancel: threading.Event | None = None) -> bool | None:
    """Does a step of ``run`` (of those known now) match? None when ``cancel`` is set."""
    match = flt.predicate()
    cannot_match = flt.bytes_test()
    step_bytes = run.step_bytes if cannot_match is not None and isinstance(run, RawSteps) else None
    for step in range(1, run.step_count + 1):
        if step % CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
            return None
        try:
            if step_bytes is not None and cannot_match is not None:
                data = step_bytes(step)
                if data is not None and not cannot_match(step, data):
                    continue
            if match(run.record(step)):
                return True
        except (IndexError, ValueError, OSError):
            continue
    return False


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
