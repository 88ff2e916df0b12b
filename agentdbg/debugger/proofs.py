"""What a scan proved about each step's bytes, kept for the next scan of the same run.

A search for a regex without a required word (``quick.regex_block_test``) first proves
which steps of each block show only their strings as written (``Block.not_verbatim``:
one pass of the verbatim grammar, most of such a search's time). The answer depends on
the step's bytes alone, so a debugger session keeps it, one byte a step, and the next
search or continue over the same steps (``n`` after ``/``) takes it instead of proving
it again. The newest step of a run still being written may grow: it is never kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_UNKNOWN, _VERBATIM, _NOT = 0, 1, 2


class StepProofs:
    """Per step and grammar (see ``Block.not_verbatim``): unknown, verbatim, or not. Blocks
    may be tested on several threads at once."""

    def __init__(self) -> None:
        self._marks: dict[bool, bytearray] = {}
        self._lock = threading.Lock()

    def test(self, run: Any, block: Any, test: Callable[[Any], set[int]]) -> set[int]:
        """``test(block)``, with what earlier scans proved lent to the block and what this
        one proves kept."""
        if block.data:
            with self._lock:
                self._lend(block)
        found = test(block)
        if block.data:
            growing = run.step_count if not run.complete else run.step_count + 1
            with self._lock:
                self._keep(block, growing)
        return found

    def _lend(self, block: Any) -> None:
        first, last = block.first, block.last
        for grammar, marks in self._marks.items():
            known = marks[first:last + 1]
            if len(known) <= last - first or _UNKNOWN in known:
                continue
            steps = set()
            at = known.find(_NOT)
            while at != -1:
                steps.add(first + at)
                at = known.find(_NOT, at + 1)
            block.prove(grammar, steps)

    def _keep(self, block: Any, growing: int) -> None:
        """Keep the block's proofs, but for steps from ``growing`` on (they may change)."""
        first, last = block.first, min(block.last, growing - 1)
        if last < first:
            return
        for grammar, steps in block.proven().items():
            marks = self._marks.setdefault(grammar, bytearray())
            if len(marks) <= last:
                marks.extend(bytes(last + 1 - len(marks)))
            marks[first:last + 1] = bytes([_VERBATIM]) * (last + 1 - first)
            for step in steps:
                if first <= step <= last:
                    marks[step] = _NOT
