"""Breakpoints on a run still being written: each arriving step is looked at once.

A ``LiveWatch`` keeps the frontier of a run that grows (a followed trace): the steps up
to ``scanned`` have been looked at. ``scan()`` looks at the steps that arrived since, in
order, with the same test a continue makes (``BreakpointSet.register_hit``: hits and
ignore counts apply), and remembers where they break. The screen then decides what a
break means: move the cursor there (when following the newest step, or waiting after
``c``), or tell an attached agent to pause there. No UI here.
"""

from __future__ import annotations

import bisect
from typing import Any

from agentdbg.debugger.breakpoints import BreakpointSet
from agentdbg.debugger.session import Stop
from agentdbg.model.runs import RawSteps

SCAN_LIMIT = 5000  # steps looked at per call (a burst is taken in slices: the screen stays live)


class LiveWatch:
    """The breaks among the steps of ``run`` after step ``start``, as they arrive."""

    def __init__(self, run: Any, breakpoints: BreakpointSet, start: int = 0):
        self.run = run
        self.breakpoints = breakpoints
        self.scanned = start
        self.breaks: dict[int, list[str]] = {}
        self._steps: list[int] = []  # the steps in ``breaks``, in order
        self._seen: dict[int, Any] = {}  # the record looked at for the newest step

    def scan(self, limit: int = SCAN_LIMIT) -> list[Stop]:
        """Look at the steps that arrived since the last scan (at most ``limit``); the
        breaks found, in order. The newest step looked at is looked at again if it grew
        since (a line its writer added late, such as a guard trip)."""
        run = self.run
        found: list[Stop] = []
        last = self.scanned
        if last and last in self._seen and last not in self.breaks:
            try:
                record = run.record(last)
            except (IndexError, ValueError, OSError):
                record = None
            if record is not None and record is not self._seen[last]:
                self._seen = {last: record}
                found += self._look(last, record)
        count = min(run.step_count, self.scanned + limit)
        step_bytes = run.step_bytes if isinstance(run, RawSteps) else None
        cannot_stop = self.breakpoints.skip_test() if step_bytes is not None else None
        for step in range(self.scanned + 1, count + 1):
            self.scanned = step
            if step_bytes is not None and cannot_stop is not None and step < count:
                data = step_bytes(step)
                if data is not None and cannot_stop(step, data):
                    continue
            try:
                record = run.record(step)
            except (IndexError, ValueError, OSError):
                continue
            if step == count:
                self._seen = {step: record}
            found += self._look(step, record)
        return found

    def _look(self, step: int, record: Any) -> list[Stop]:
        reasons = self.breakpoints.register_hit(record)
        if not reasons:
            return []
        if step not in self.breaks:
            bisect.insort(self._steps, step)
        self.breaks[step] = reasons
        return [Stop(step, reasons)]

    def next_break(self, after: int, through: int | None = None) -> Stop | None:
        """The first break found after step ``after`` (up to ``through``)."""
        at = bisect.bisect_right(self._steps, after)
        if at == len(self._steps):
            return None
        step = self._steps[at]
        if through is not None and step > through:
            return None
        return Stop(step, self.breaks[step])

    @property
    def behind(self) -> bool:
        """Steps have arrived that have not been looked at yet."""
        return self.scanned < int(self.run.step_count)
