"""Runs as the debugger and the headless commands see them, whatever they came from.

A ``RunView`` gives step records and derived state by step number. Three kinds exist:
``EventRun`` (events in memory: imports, finished plans), ``LiveRun`` (a plan stepped by
the engine on demand, recording as it goes) and the trace reader's file-backed run
(``agentdbg.trace.reader``), which reads steps by offset instead of holding them.
A ``Document`` is what was opened: one or more runs plus the problems found reading it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentdbg.engine import events as ev
from agentdbg.engine.agent import AgentRun
from agentdbg.engine.approval import ApprovalRequest, Approver, Decision, decide
from agentdbg.errors import Problem as Problem  # named from here too
from agentdbg.model.state import Run, RunInfo, RunState, StepGrouper, StepRecord, Tally, group_run


@runtime_checkable
class RunView(Protocol):
    info: RunInfo

    @property
    def step_count(self) -> int:
        """Steps known now (a live run or a file still being indexed may grow)."""

    @property
    def complete(self) -> bool:
        """True when no more steps will appear."""

    @property
    def end(self) -> ev.RunEnd | None: ...

    @property
    def preamble(self) -> tuple[ev.Event, ...]:
        """Events before the first step: records that could not be placed in a step."""

    def record(self, step: int) -> StepRecord:
        """Step ``step`` (1-based); IndexError when it does not exist (yet)."""

    def state_at(self, step: int) -> RunState:
        """Derived state after ``step`` (0 = before the first step)."""

    def events(self) -> list[ev.Event]:
        """Every event of the run, in order (for writing it out)."""


# What some runs can do beyond RunView, asked with isinstance (never by probing names).
@runtime_checkable
class Advancing(Protocol):
    """A run the engine steps on demand (a plan): a step exists once it is asked for."""

    def advance(self) -> bool:
        """Run one more step; False when the run has already ended."""


@runtime_checkable
class RawSteps(Protocol):
    """A file-backed run that hands out a step's raw lines, so a filter or a breakpoint
    can pass a step that cannot match without decoding it."""

    def step_bytes(self, step: int) -> bytes | None:
        """Step ``step``'s lines as written (None when not at hand)."""


@runtime_checkable
class StepBlocks(Protocol):
    """A file-backed run whose steps can be read a few MiB at a time, each block with the
    steps that may matter (``agentdbg.trace.scan``): a full scan decodes only those."""

    def step_blocks(self, first: int = 1, last: int | None = None, *, strict: bool = False,
                    reverse: bool = False, fold: bool = False, ahead: bool = False) -> Iterator[Any]:
        """Blocks of steps ``first``..``last`` (``agentdbg.trace.scan.Block``); ``fold``:
        their steps folded into counters at once (``Block.folds``); ``ahead``: every
        block's candidates will be read (found ahead, where that is possible)."""


@runtime_checkable
class Indexing(Protocol):
    """A run whose steps are found in the background (a file being indexed or followed)."""

    def wait_for(self, step: int, timeout: float | None = None) -> bool:
        """Block until step ``step`` is known or no more steps will come; True if it is."""


@runtime_checkable
class Growing(Protocol):
    """A document read in the background (a trace being indexed or followed): it tells of
    new runs and steps, and of problems, from the thread that found them."""

    def subscribe(self, on_progress: Callable[[], None] | None = None,
                  on_problem: Callable[[Problem], None] | None = None) -> None: ...


@runtime_checkable
class Tallied(Protocol):
    """A file-backed run that knows its counters after its last step without replaying it
    (its last checkpoint and a fast fold of the steps after it)."""

    def tally(self) -> Tally: ...


def last_tally(run: Any) -> Tally:
    """The counters after the run's last step known now: fast where the run can tell them,
    else folded from its state there."""
    if isinstance(run, Tallied):
        return run.tally()
    return Tally.from_state(run.state_at(run.step_count))


@runtime_checkable
class Closable(Protocol):
    """A run holding something to let go of (a file's descriptor, an agent's thread)."""

    def close(self) -> None: ...


@runtime_checkable
class Cancellable(Protocol):
    """A run whose step in progress can be given up from another thread (on quitting)."""

    def cancel(self) -> None: ...


class EventRun:
    """A run whose events are in memory."""

    def __init__(self, events: list[ev.Event], title: str = ""):
        self._events = list(events)
        self._run: Run = group_run(self._events)
        self._grouper: StepGrouper | None = None  # made when the run first grows
        self.info = self._run.info
        self.title = title or self.info.name or self.info.task[:60]
        self._states: list[RunState] = [RunState.initial(self.info)]

    @property
    def step_count(self) -> int:
        return len(self._run.records)

    @property
    def complete(self) -> bool:
        return True

    @property
    def end(self) -> ev.RunEnd | None:
        return self._run.end

    @property
    def preamble(self) -> tuple[ev.Event, ...]:
        return self._run.preamble

    def record(self, step: int) -> StepRecord:
        if not 1 <= step <= len(self._run.records):
            raise IndexError(f"no step {step}: the run has {len(self._run.records)}")
        return self._run.records[step - 1]

    def state_at(self, step: int) -> RunState:
        step = max(0, min(step, len(self._run.records)))
        # States are cached as they are first asked for: stepping is O(1) after that.
        while len(self._states) <= step:
            n = len(self._states)
            self._states.append(self._states[-1].advance(self._run.records[n - 1]))
        return self._states[step]

    def events(self) -> list[ev.Event]:
        return list(self._events)

    def extend(self, events: list[ev.Event]) -> None:
        """Append events that continue the run; only the steps they touch are regrouped."""
        if self._grouper is None:  # grouped whole at first: regroup once to carry on from there
            self._grouper = StepGrouper()
            for event in self._events:
                self._grouper.add(event)
        self._events.extend(events)
        grouper, records = self._grouper, self._run.records
        was_open, had = grouper.step, len(grouper.events)
        touched = [record for event in events if (record := grouper.add(event)) is not None]
        last = grouper.open_record()
        if last is not None:
            touched.append(last)
        if touched and was_open and touched[0].step == was_open and records:
            first = touched.pop(0)  # the step that was open: replaced only when it grew
            if len(first.events) != had:
                records[-1] = first
                del self._states[len(records):]
        records.extend(touched)
        self._run.end, self._run.preamble = grouper.end, tuple(grouper.preamble)


class LiveRun:
    """A plan run by the engine one step at a time, as the user steps forward.

    Every event is kept (and passed to ``on_event``, e.g. a recorder), so stepping back
    over a live run is as exact as over a saved one. ``approver`` decides on calls to
    dangerous tools (the debugger sets its dialog); it may be set or swapped at any time.
    The factory is given the events' callback and the approver to hand to the engine."""

    def __init__(self, agent_run_factory: Callable[[Callable[[ev.Event], None], Approver], AgentRun],
                 title: str = "", approver: Approver | None = None):
        self._events: list[ev.Event] = []
        self._listeners: list[Callable[[ev.Event], None]] = []
        self.approver = approver
        self.plan: Any = None  # the plan that runs it, when a fork of it may be made
        self._agent_run = agent_run_factory(self._on_event, self._ask)
        self._view = EventRun(self._events, title)
        self._grouped = len(self._events)  # events already handed to the view
        self.info = self._view.info
        self.title = self._view.title

    def _on_event(self, event: ev.Event) -> None:
        self._events.append(event)
        for listener in self._listeners:
            listener(event)

    def _ask(self, request: ApprovalRequest) -> Decision:
        return decide(self.approver, request)

    def subscribe(self, listener: Callable[[ev.Event], None]) -> None:
        """Receive every event: those already emitted now, the rest as they happen."""
        for event in self._events:
            listener(event)
        self._listeners.append(listener)

    def advance(self) -> bool:
        """Run one more engine step; False when the run has already ended."""
        if self._agent_run.done:
            return False
        self._agent_run.step()
        self._view.extend(self._events[self._grouped:])
        self._grouped = len(self._events)
        return True

    def advance_to(self, step: int) -> None:
        while self.step_count < step and self.advance():
            pass

    def cancel(self) -> None:
        """From another thread: a step waiting on a model call gives up at once (on quitting)."""
        self._agent_run.cancel()

    @property
    def step_count(self) -> int:
        return self._view.step_count

    @property
    def complete(self) -> bool:
        return self._agent_run.done

    @property
    def end(self) -> ev.RunEnd | None:
        return self._view.end

    @property
    def preamble(self) -> tuple[ev.Event, ...]:
        return self._view.preamble

    def record(self, step: int) -> StepRecord:
        return self._view.record(step)

    def state_at(self, step: int) -> RunState:
        return self._view.state_at(step)

    def events(self) -> list[ev.Event]:
        return list(self._events)


@dataclass
class Document:
    """What was opened: its runs (episodes), what kind of input it was, and problems."""

    path: str
    kind: str  # "plan", "trace", or an importer's format name
    runs: Sequence[Any] = field(default_factory=list)  # RunView objects
    problems: list[Problem] = field(default_factory=list)
    plan: Any = None  # the plan a "plan" document runs (a fork re-runs its policy)
    runs_left_unread: int = 0  # runs a command chose not to read (its --max-runs)

    @property
    def complete(self) -> bool:
        """No more runs or steps will be found (a file read in the background: once done)."""
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until ``complete``; False on timeout. A document read whole is complete."""
        return True

    def close(self) -> None:
        for run in self.runs:
            if isinstance(run, Closable):
                run.close()
