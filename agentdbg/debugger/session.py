"""The debugger's cursor over one run: stepping both ways, continue and reverse-continue
to the next breakpoint, go-to, and transcript search. No UI here: the app calls these.

Stepping semantics (see docs/debugger.md):

* ``cursor`` is the step shown: 1..step_count, or 0 only while the run has no step yet.
  The state shown at the cursor is ``run.state_at(cursor)``: the fold of steps 1..cursor,
  so stepping back shows exactly the earlier state.
* A live run (a plan, ``runs.LiveRun``) runs the engine only as far as the cursor goes:
  stepping forward past the last step the engine has taken asks it for one more step, and a
  continue runs it until a breakpoint stops it or the run ends.
* A file still being indexed (``run.complete`` is False, no ``advance``) may gain steps; a
  continue that reaches the last indexed step stops there with ``END_OF_INDEXED`` instead of
  waiting, so the user can continue again once more is read.
* A file-backed run may offer ``step_bytes(step)`` (the step's lines as the trace holds
  them, or None): a continue then skips decoding steps that ``BreakpointSet.skip_test``
  shows cannot stop, which makes long scans an order of magnitude faster.
* A continue moves the cursor only when it finishes: a cancelled continue returns None and
  leaves the cursor where it was (the scan runs off the UI thread; the cursor never jumps
  about under the screen). Hit counts it registered on the way stay counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentdbg.debugger.breakpoints import BreakpointSet, as_reason
from agentdbg.debugger.candidates import candidate_steps
from agentdbg.debugger.find import Query, find_step, search_pattern
from agentdbg.debugger.proofs import StepProofs
from agentdbg.debugger.view import StepView
from agentdbg.model.runs import Advancing, RawSteps, RunView, StepBlocks
from agentdbg.model.state import RunState, StepRecord

END_OF_RUN = "end of run"
START_OF_RUN = "start of run"
END_OF_INDEXED = "end of indexed steps (the file is still being read; continue again for more)"
PROGRESS_EVERY = 4096  # steps between progress calls during a long continue or search
CANCEL_EVERY = 256  # steps between looks at the cancel flag
LIVE_PROGRESS_EVERY = 64  # a live run's engine is slower: report more often


@dataclass(frozen=True)
class Stop:
    """Where a continue stopped and why (breakpoint reasons, or the run's edge)."""

    step: int
    reasons: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        """One line for the status bar."""
        why = "; ".join(self.reasons) if self.reasons else "no reason"
        return f"Stopped at step {self.step}: {why}"

    @property
    def at_breakpoint(self) -> bool:
        """False when the continue only ran into the run's start or end."""
        return not set(self.reasons) <= {END_OF_RUN, START_OF_RUN, END_OF_INDEXED}


class DebugSession:
    """A cursor over ``run`` with breakpoints. Not thread-safe for concurrent moves: run
    one continue or search at a time (off the UI thread is fine)."""

    def __init__(self, run: RunView, breakpoints: BreakpointSet | None = None):
        self.run = run
        self.breakpoints = breakpoints if breakpoints is not None else BreakpointSet()
        self.cursor = 1 if run.step_count > 0 else 0
        self.view: StepView | None = None  # a view filter: stepping moves between its steps
        self.proofs = StepProofs()  # what scans proved of the steps' bytes, for the next scan

    # --- what is at the cursor -------------------------------------------------------

    @property
    def step_count(self) -> int:
        return self.run.step_count

    @property
    def is_live(self) -> bool:
        """The engine runs this run on demand (a plan)."""
        return isinstance(self.run, Advancing)

    def record(self) -> StepRecord | None:
        """The step at the cursor (None before the first step exists)."""
        return self.run.record(self.cursor) if self.cursor > 0 else None

    def state(self) -> RunState:
        """The derived state after the cursor's step."""
        return self.run.state_at(self.cursor)

    def reasons(self) -> list[str]:
        """Why the cursor's step would stop a continue (for the status line and markers)."""
        return self.breakpoints.reasons(self.record())

    @property
    def at_start(self) -> bool:
        return self.cursor <= 1

    @property
    def at_end(self) -> bool:
        return self.cursor >= self.run.step_count and self.run.complete

    # --- moving ----------------------------------------------------------------------

    def _advance_live(self) -> bool:
        """One more engine step of a live run; False when it has ended (or is not live)."""
        if not self.is_live or self.run.complete:
            return False
        before = self.run.step_count
        if isinstance(self.run, Advancing):
            self.run.advance()
        return self.run.step_count > before

    def _reach(self, step: int) -> None:
        """Make ``step`` exist if a live run can get there."""
        while self.run.step_count < step and self._advance_live():
            pass

    def step_forward(self) -> bool:
        """One step on; on a live run at its newest step, the engine takes one step.
        With a view filter on, the next step it keeps."""
        if self.view is not None:
            return self._to(self.view.next_after(self.cursor))
        self._reach(self.cursor + 1)
        if self.cursor < self.run.step_count:
            self.cursor += 1
            return True
        return False

    def step_back(self) -> bool:
        if self.view is not None:
            return self._to(self.view.previous_before(self.cursor))
        if self.cursor > 1:
            self.cursor -= 1
            return True
        return False

    def _to(self, step: int | None) -> bool:
        if step is None:
            return False
        self.cursor = step
        return True

    def goto(self, step: int) -> int:
        """Go to ``step``, clamped to the run; a live run is run up to it. Returns the cursor."""
        step = int(step)
        self._reach(step)
        count = self.run.step_count
        self.cursor = 0 if count == 0 else max(1, min(step, count))
        return self.cursor

    def home(self) -> int:
        if self.view is not None and len(self.view):
            return self.goto(self.view[0])
        return self.goto(1)

    def end(self) -> int:
        """The last step known now. A live run is not run ahead: continue does that."""
        if self.view is not None and len(self.view):
            return self.goto(self.view[-1])
        return self.goto(self.run.step_count)

    # --- continue --------------------------------------------------------------------

    def _skipping(self) -> tuple[Callable[[int], bytes | None] | None, Callable[[int, bytes], bool] | None]:
        """For a file-backed run that can hand out a step's raw lines (``step_bytes``), the
        breakpoints' byte test: steps that cannot stop are passed without being decoded."""
        if not isinstance(self.run, RawSteps):
            return None, None
        return self.run.step_bytes, self.breakpoints.skip_test()

    def continue_forward(self, cancel: threading.Event | None = None,
                         progress: Callable[[int], None] | None = None) -> Stop | None:
        """Run forward from the step after the cursor to the first step a breakpoint stops
        at; move there and say why. With nothing to stop at, move to the last step
        (``END_OF_RUN``, or ``END_OF_INDEXED`` while a file is still being read).
        Returns None, cursor unchanged, when ``cancel`` is set."""
        run = self.run
        register = self.breakpoints.register_hit
        may_stop = self._block_test()
        if may_stop is not None:
            return self._scan_blocks(may_stop, True, cancel, progress)
        step_bytes, cannot_stop = self._skipping()
        # An engine step costs far more than a look at the flag: a live run checks each step.
        check_every, report_every = (1, LIVE_PROGRESS_EVERY) if self.is_live else (CANCEL_EVERY, PROGRESS_EVERY)
        step = self.cursor + 1
        while True:
            if step % check_every == 0:
                if cancel is not None and cancel.is_set():
                    return None
                if progress is not None and step % report_every == 0:
                    progress(step)
            if step > run.step_count and not self._advance_live():
                break
            if step_bytes is not None and cannot_stop is not None:
                data = step_bytes(step)
                if data is not None and cannot_stop(step, data):
                    step += 1
                    continue
            reasons = register(run.record(step))
            if reasons:
                self.cursor = step
                return Stop(step, reasons)
            step += 1
        if cancel is not None and cancel.is_set():
            return None
        # The last step scanned, not step_count read again: an index that grew meanwhile
        # must not let the cursor jump past steps nobody looked at.
        last = step - 1
        self.cursor = last
        return Stop(last, [END_OF_RUN if run.complete and last >= run.step_count else END_OF_INDEXED])

    def continue_back(self, cancel: threading.Event | None = None,
                      progress: Callable[[int], None] | None = None) -> Stop | None:
        """Reverse-continue: the nearest earlier step a breakpoint stops at, or step 1
        (``START_OF_RUN``). Returns None, cursor unchanged, when ``cancel`` is set."""
        run = self.run
        register = self.breakpoints.register_hit
        may_stop = self._block_test()
        if may_stop is not None:
            return self._scan_blocks(may_stop, False, cancel, progress)
        step_bytes, cannot_stop = self._skipping()
        for step in range(min(self.cursor, run.step_count + 1) - 1, 0, -1):
            if step % CANCEL_EVERY == 0:
                if cancel is not None and cancel.is_set():
                    return None
                if progress is not None and step % PROGRESS_EVERY == 0:
                    progress(step)
            if step_bytes is not None and cannot_stop is not None:
                data = step_bytes(step)
                if data is not None and cannot_stop(step, data):
                    continue
            reasons = register(run.record(step))
            if reasons:
                self.cursor = step
                return Stop(step, reasons)
        if cancel is not None and cancel.is_set():
            return None
        self.cursor = 1 if run.step_count else 0
        return Stop(self.cursor, [START_OF_RUN])

    def _block_test(self) -> Callable[[Any], set[int]] | None:
        """The breakpoints' block test, for a trace file's run that reads its steps a block
        at a time (``StepBlocks``); None when a continue must go step by step."""
        if not isinstance(self.run, StepBlocks) or isinstance(self.run, Advancing):
            return None
        return self.breakpoints.block_test()

    def _scan_blocks(self, may_stop: Callable[[Any], set[int]], forward: bool, cancel: threading.Event | None,
                     progress: Callable[[int], None] | None) -> Stop | None:
        """A continue over a trace file a block of steps at a time (``run.step_blocks``):
        only the steps the breakpoints' block test cannot rule out are decoded. The same
        stops as stepping through every step."""
        run = self.run
        assert isinstance(run, StepBlocks)
        register = self.breakpoints.register_hit
        if forward:
            first, last = self.cursor + 1, run.step_count
        else:
            first, last = 1, min(self.cursor, run.step_count + 1) - 1
        while first <= last:
            for step in candidate_steps(run, may_stop, first, last, reverse=not forward, cancel=cancel,
                                        progress=progress, proofs=self.proofs, ahead=True):
                if step is None:
                    return None
                reasons = register(run.record(step))
                if reasons:
                    self.cursor = step
                    return Stop(step, reasons)
            if not forward:
                break
            first, last = last + 1, run.step_count  # steps indexed meanwhile
        if cancel is not None and cancel.is_set():
            return None
        if not forward:
            self.cursor = 1 if run.step_count else 0
            return Stop(self.cursor, [START_OF_RUN])
        # The last step scanned, not step_count read again: an index that grew meanwhile
        # must not let the cursor jump past steps nobody looked at.
        last = first - 1
        self.cursor = last
        return Stop(last, [END_OF_RUN if run.complete and last >= run.step_count else END_OF_INDEXED])

    # --- search ----------------------------------------------------------------------

    def search(self, text_or_regex: str, forward: bool = True, from_step: int | None = None,
               wrap: bool = True, cancel: threading.Event | None = None,
               progress: Callable[[int], None] | None = None) -> int | None:
        """The next step (after ``from_step``, default the cursor; before it when
        ``forward`` is False) whose transcript matches, wrapping round the run when
        ``wrap``. The text is a regex with smart case; one that is not a valid regex is
        looked for literally. Does not move the cursor, never runs a live engine ahead.
        None when nothing matches or ``cancel`` is set."""
        pattern = search_pattern(text_or_regex)
        if pattern is None:
            return None
        count = self.run.step_count
        origin = self.cursor if from_step is None else max(0, min(int(from_step), count + 1))
        return find_step(self.run, Query(text_or_regex, pattern=pattern), origin, forward, wrap, cancel,
                         proofs=self.proofs, progress=progress)

    def describe(self) -> str:
        """A short position line: "step 3 of 5" (and "so far" while more may come)."""
        more = "" if self.run.complete else " so far"
        return as_reason(f"step {self.cursor} of {self.run.step_count}{more}")
