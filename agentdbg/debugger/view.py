"""A view filter (mitmproxy's ``f``): the steps of a run a filter expression keeps.

The view is the list of matching step numbers, found by one scan of the run (steps the
filter's byte test rules out are passed without being decoded), held as a flat array: a
million matching steps cost 8 MB. Stepping while a view is on moves between its steps.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Callable
from typing import Any

from agentdbg.debugger.filters import Filter
from agentdbg.debugger.run_filter import iter_matching_steps


class StepView:
    """The steps ``text`` matched among the first ``scanned`` steps of a run."""

    def __init__(self, text: str, steps: array[int], scanned: int):
        self.text = text
        self.steps = steps
        self.scanned = scanned

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> int:
        return int(self.steps[index])

    def __contains__(self, step: int) -> bool:
        index = bisect.bisect_left(self.steps, step)
        return index < len(self.steps) and self.steps[index] == step

    def row_of(self, step: int) -> int:
        """The row (0-based) ``step`` is on, or would be on: the first kept step at or after it."""
        return bisect.bisect_left(self.steps, step)

    def next_after(self, step: int) -> int | None:
        index = bisect.bisect_right(self.steps, step)
        return int(self.steps[index]) if index < len(self.steps) else None

    def previous_before(self, step: int) -> int | None:
        index = bisect.bisect_left(self.steps, step)
        return int(self.steps[index - 1]) if index > 0 else None

    def nearest(self, step: int) -> int | None:
        """``step`` when kept, else the next kept step, else the last one before it."""
        if step in self:
            return step
        following = self.next_after(step)
        return following if following is not None else self.previous_before(step)

    def describe(self) -> str:
        return f"{len(self.steps):,} of {self.scanned:,} steps"


def scan_view(run: Any, text: str, flt: Filter, cancel: threading.Event | None = None,
              progress: Callable[[int], None] | None = None) -> StepView | None:
    """The view of ``run`` through ``flt`` (the steps known now); None when cancelled."""
    scanned = run.step_count
    steps = array("q")
    for step in iter_matching_steps(run, flt, cancel, stop=scanned, progress=progress):
        if step is None:
            return None
        steps.append(step)
    return StepView(text, steps, scanned)
