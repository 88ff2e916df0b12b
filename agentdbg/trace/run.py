"""A trace file's runs: each read by offset when asked for, steps decoded and states
derived on demand, kept in bounded caches."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Sequence
from typing import Any, overload

from agentdbg.cache import LRUCache
from agentdbg.engine import events as ev
from agentdbg.model.state import RunInfo, RunState, StepRecord, Tally
from agentdbg.trace import format as fmt
from agentdbg.trace import scan
from agentdbg.trace.index import TraceIndex
from agentdbg.trace.source import _Source

RECORD_CACHE = 4096  # decoded steps kept per run
FAST_FOLD_AFTER = fmt.CHECKPOINT_EVERY  # stats folds more steps than this from their bytes
STATE_CACHE = 4096  # derived states kept per run
RUN_CACHE = 1024  # run objects kept (the others are made again when asked for)


class TraceRuns(Sequence[Any]):
    """The runs of a trace as a sequence whose items are made when first asked for: a
    file of a million runs costs its offsets, not a million objects. The most recently
    used runs are kept, so asking twice gives the same object."""

    def __init__(self, source: _Source, index: TraceIndex):
        self._source = source
        self._index = index
        self._made: LRUCache[int, TraceRun] = LRUCache(RUN_CACHE)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._index.run_count

    @overload
    def __getitem__(self, item: int) -> TraceRun: ...

    @overload
    def __getitem__(self, item: slice) -> list[TraceRun]: ...

    def __getitem__(self, item: int | slice) -> TraceRun | list[TraceRun]:
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(len(self)))]
        count = len(self)
        number = item + count if item < 0 else item
        if not 0 <= number < count:
            raise IndexError(f"no run {item}: the file has {count} runs")
        with self._lock:
            run = self._made.get(number)
            if run is None:
                run = TraceRun(self._source, self._index, number)
                self._made.set(number, run)
            return run

    def __eq__(self, other: object) -> bool:
        return list(self) == other if isinstance(other, (list, tuple, TraceRuns)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} runs>"

    def close(self) -> None:
        with self._lock:
            made = list(self._made.values())
            self._made.clear()
        for run in made:
            run.close()


class TraceRun:
    """One run of a trace file, read by offset (a ``runs.RunView``)."""

    def __init__(self, source: _Source, index: TraceIndex, run: int):
        self._source = source
        self._index = index
        self._run = run  # its place in the index's arrays
        self.number = run + 1
        self._info: RunInfo | None = None
        self._header: list[ev.Event] | None = None
        self._records: LRUCache[int, tuple[int, StepRecord]] = LRUCache(RECORD_CACHE)  # step -> (its end, record)
        self._states: LRUCache[int, RunState] = LRUCache(STATE_CACHE)
        self._bad_checkpoints: set[int] = set()
        self._milestones: dict[int, RunState] = {}
        self._milestone_steps: list[int] = []
        self._cache_lock = threading.Lock()

    # -- header -----------------------------------------------------------------------
    @property
    def info(self) -> RunInfo:
        if self._info is None:
            with self._index.lock:
                start = self._index.run_starts[self._run]
            event = None
            header = self._header_events() if start >= 0 else []
            if header and isinstance(header[0], ev.RunStart):
                event = header[0]
            elif start >= 0 and not header:
                for line in self._source.lines(start, self._source.data_end, first_only=True):
                    decoded = self._source.decode(line, 0)
                    event = decoded if isinstance(decoded, ev.RunStart) else None
                    break
            self._info = RunInfo.from_event(event)
        return self._info

    @property
    def title(self) -> str:
        info = self.info
        return info.name or info.task[:60] or f"run {self.number}"

    @property
    def line(self) -> int:
        """The line the run begins on (its run_start, or its first step without one)."""
        index = self._index
        with index.lock:
            start = index.run_starts[self._run]
            if start < 0:
                start = index.steps[index.run_first[self._run]]
        return self._source.line_number(start)

    # -- size -------------------------------------------------------------------------
    @property
    def step_count(self) -> int:
        with self._index.lock:
            return self._index._published(self._run)

    @property
    def complete(self) -> bool:
        with self._index.lock:
            return self._index._run_end(self._run) is not None

    @property
    def checkpoint_steps(self) -> list[int]:
        """The step each of the run's checkpoints follows (0: before its first step)."""
        index = self._index
        with index.lock:
            first, stop = index._run_checkpoints(self._run)
            return [index.checkpoint_positions[k] - index.run_first[self._run] for k in range(first, stop)]

    def wait_for(self, step: int, timeout: float | None = None) -> bool:
        """Wait until step ``step`` is indexed (or the run is known to be shorter)."""
        index, run = self._index, self._run
        with index.lock:
            return index.lock.wait_for(
                lambda: index._published(run) >= step or index._run_end(run) is not None, timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every step of the run is indexed (of a run still being written:
        every step the file holds now)."""
        index, run = self._index, self._run
        with index.lock:
            return index.lock.wait_for(lambda: index._run_end(run) is not None or (index.live and index.complete),
                                       timeout)

    @property
    def live(self) -> bool:
        """The run is still being written (its file is followed and it has not ended)."""
        with self._index.lock:
            return self._index.live and self._index._run_end(self._run) is None

    def pending_record(self) -> StepRecord | None:
        """A run still being written: its newest step as far as its lines go now (not yet
        counted in ``step_count``: more of it may come); None when there is none."""
        index = self._index
        with index.lock:
            if not index.live or index._run_end(self._run) is not None:
                return None
            first, stop = index._run_steps(self._run)
            count = stop - first
            if count == 0 or index._published(self._run) == count:
                return None
            start, end = index.steps[stop - 1], self._source.data_end
        return StepRecord.from_events(count, self._source.decode_span(start, end, count))

    @property
    def end(self) -> ev.RunEnd | None:
        if not self.complete:
            return None
        count = self.step_count
        if count:
            return self.record(count).end
        for event in self._header_events():
            if isinstance(event, ev.RunEnd):
                return event
        return None

    @property
    def preamble(self) -> tuple[ev.Event, ...]:
        """Events between the run's header and its first step."""
        return tuple(e for e in self._header_events()
                     if not isinstance(e, (ev.RunStart, ev.RunEnd, ev.Checkpoint, ev.StepStart)))

    def _header_events(self) -> list[ev.Event]:
        """The run_start line and what follows it up to the first step (decoded once)."""
        if self._header is not None:
            return self._header
        index = self._index
        with index.lock:
            start = index.run_starts[self._run]
            first, stop_step = index._run_steps(self._run)
            stop = index.steps[first] if stop_step > first else index._run_end(self._run)
        if start < 0 or stop is None:
            return []
        self._header = self._source.decode_span(start, stop, 0)
        return self._header

    # -- steps ------------------------------------------------------------------------
    def _span(self, step: int) -> tuple[int, int]:
        index = self._index
        with index.lock:
            count = index._published(self._run)
            if not isinstance(step, int) or not 1 <= step <= count:
                more = "" if index._run_end(self._run) is not None else " indexed so far"
                raise IndexError(f"no step {step}: the run has {count} steps{more}")
            first, stop = index._run_steps(self._run)
            start = index.steps[first + step - 1]
            if first + step < stop:
                end = index.steps[first + step]
            else:  # the last step: a followed run's newest step ends where the file ends now
                run_end = index._run_end(self._run)
                end = self._source.data_end if run_end is None else run_end
        return start, end

    def record(self, step: int) -> StepRecord:
        start, end = self._span(step)
        with self._cache_lock:
            cached = self._records.get(step)
            if cached is not None and cached[0] == end:
                return cached[1]
        record = StepRecord.from_events(step, self._source.decode_span(start, end, step))
        with self._cache_lock:
            if cached is not None:  # the step grew (a followed file): what was derived from it goes
                self._forget_from(step)
            self._records.set(step, (end, record))
        return record

    def _forget_from(self, step: int) -> None:
        """Drop the states derived from ``step`` on (call with the cache lock held)."""
        for number in [n for n in self._states.keys() if n >= step]:
            self._states.discard(number)
        for number in [n for n in self._milestones if n >= step]:
            del self._milestones[number]
        self._milestone_steps = [n for n in self._milestone_steps if n < step]

    def step_bytes(self, step: int) -> bytes | None:
        """Step ``step``'s lines exactly as the file holds them (checkpoint lines included),
        for cheap byte-level tests that skip decoding; None when the step is larger than
        one line may be (decode it with ``record`` instead). IndexError like ``record``."""
        start, end = self._span(step)
        end = min(end, self._source.data_end)
        if end - start > self._source.max_line_bytes:
            return None
        return self._source.pread(end - start, start)

    def step_blocks(self, first: int = 1, last: int | None = None, *, strict: bool = False,
                    reverse: bool = False, fold: bool = False, ahead: bool = False) -> Iterator[scan.Block]:
        """Steps ``first``..``last`` (default: the last indexed) read a few MiB at a time,
        each block with the steps that may matter (``agentdbg.trace.scan``): a full scan
        decodes only those. Steps indexed now; a followed run's newest step ends where the
        file ends now."""
        count = self.step_count
        last = count if last is None else min(last, count)
        first = max(first, 1)
        if last < first:
            return iter(())
        index = self._index
        with index.lock:
            base, _ = index._run_steps(self._run)
            starts = index.steps[base + first - 1:base + last]
        _, end = self._span(last)
        return scan.blocks(starts, min(end, self._source.data_end), first, self._source.pread, strict=strict,
                           reverse=reverse, fold=fold, file_at=self._source.file_at(), ahead=ahead)

    def iter_records(self, start: int = 1) -> Iterator[StepRecord]:
        """Every step from ``start``, waiting for the index as needed (for streaming output)."""
        step = start
        while True:
            if step > self.step_count:
                self.wait_for(step)
                if step > self.step_count:
                    return
            yield self.record(step)
            step += 1

    # -- derived state ----------------------------------------------------------------
    def state_at(self, step: int) -> RunState:
        step = max(0, min(step, self.step_count))
        if step == 0:
            return RunState.initial(self.info)
        with self._cache_lock:
            cached = self._states.get(step)
            if cached is not None:
                return cached
        base_step, state = self._base_state(step)
        for number in range(base_step + 1, step + 1):
            state = state.advance(self.record(number))
            self._keep_state(number, state)
        return state

    def tally(self) -> Tally:
        """The counters after the last step (``agentdbg stats``): from the last checkpoint,
        or, when that is far back, folded fast from the bytes of the steps after it
        (``agentdbg.trace.tally``: the same figures as decoding every step)."""
        count = self.step_count
        if count == 0:
            return Tally.from_state(RunState.initial(self.info))
        base_step, base_state = self._base_state(count)
        if count - base_step <= FAST_FOLD_AFTER:
            return Tally.from_state(self.state_at(count))
        return scan.fold_tally(self, Tally.from_state(base_state), base_step + 1, count)

    def _keep_state(self, step: int, state: RunState, milestone: bool = False) -> None:
        with self._cache_lock:
            self._states.set(step, state)
            # Every CHECKPOINT_EVERY steps a state is kept for good: a file without
            # checkpoints gets the same cheap random access once it has been read through.
            if (milestone or step % fmt.CHECKPOINT_EVERY == 0) and step not in self._milestones:
                self._milestones[step] = state
                bisect.insort(self._milestone_steps, step)

    def _base_state(self, step: int) -> tuple[int, RunState]:
        """The nearest known state at or before ``step``: a recent cached state, a kept
        milestone, or a checkpoint from the file; the run's start when there is none."""
        with self._cache_lock:
            for number in range(step - 1, max(step - fmt.CHECKPOINT_EVERY, 0), -1):
                if number in self._states:
                    return number, self._states[number]
            at = bisect.bisect_right(self._milestone_steps, step) - 1
            best_step = self._milestone_steps[at] if at >= 0 else 0
            best = self._milestones[best_step] if at >= 0 else None
        index = self._index
        with index.lock:
            first, stop = index._run_checkpoints(self._run)
            base = index.run_first[self._run]
            # the last checkpoint that follows a step at or before ``step``
            at = bisect.bisect_right(index.checkpoint_positions, base + step, first, stop) - 1
        while at >= first:
            with index.lock:
                checkpoint_step = index.checkpoint_positions[at] - base
                offset = index.checkpoint_offsets[at]
            if checkpoint_step <= best_step:
                break
            if checkpoint_step > 0 and offset not in self._bad_checkpoints:
                state = self._load_checkpoint(checkpoint_step, offset)
                if state is not None:
                    self._keep_state(checkpoint_step, state, milestone=True)
                    return checkpoint_step, state
            at -= 1
        if best is not None:
            return best_step, best
        return 0, RunState.initial(self.info)

    def _load_checkpoint(self, step: int, offset: int) -> RunState | None:
        for line in self._source.lines(offset, self._source.data_end, first_only=True):
            event = self._source.decode(line, step)
            problem = None
            if not isinstance(event, ev.Checkpoint):
                problem = "checkpoint line could not be read"
            else:
                try:
                    state = RunState.from_dict(event.state)
                except ValueError as exc:
                    problem = str(exc)
                else:
                    if event.step == step and state.step == step:
                        return state
                    problem = f"checkpoint says step {event.step}, but it follows step {step}"
            self._bad_checkpoints.add(offset)
            self._source.report(offset, f"{problem}; the state is rebuilt from the steps instead")
            return None
        return None

    # -- events -----------------------------------------------------------------------
    def iter_events(self) -> Iterator[ev.Event]:
        """Every event of the run in order, read as it goes (checkpoints left out)."""
        self.wait()
        index = self._index
        with index.lock:
            start = index.run_starts[self._run]
            first, stop = index._run_steps(self._run)
            header_end = index.steps[first] if stop > first else index._run_end(self._run)
        if start >= 0 and header_end is not None:
            yield from self._source.iter_span(start, header_end, 0)
        for step in range(1, self.step_count + 1):
            start, end = self._span(step)
            yield from self._source.iter_span(start, end, step)

    def events(self) -> list[ev.Event]:
        return list(self.iter_events())

    def close(self) -> None:
        with self._cache_lock:
            self._records.clear()
            self._states.clear()
