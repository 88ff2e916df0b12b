"""The index of a trace file: where each run and step begins (byte offsets only),
built a chunk at a time, the first at once and the rest on a background thread."""

from __future__ import annotations

import bisect
import re
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from agentdbg.trace import format as fmt
from agentdbg.trace import workers
from agentdbg.trace.follow import Follower
from agentdbg.trace.locking import writer_holds
from agentdbg.trace.source import _BOM, _size_text, _Source

FIRST_CHUNK_BYTES = 256 * 1024  # indexed before open_trace returns: the first screen
CHUNK_BYTES = 1024 * 1024  # then this much per step of the background index
APART_BYTES = 8 * 1024 * 1024  # or this much per piece indexed in a worker process
NOTIFY_INTERVAL = 0.05  # seconds between progress notifications (a screen need not redraw more)
_STRUCTURE = re.compile(rb'\n\{"type":"(?:step|run_start|checkpoint)",')
_STRUCTURE_TYPES = ("step", "run_start", "checkpoint")
_STEP_LINES = re.compile(rb'\n\{"type":"step",')
_STEP_LINE_BYTES = len(b'\n{"type":"step",')
_OTHER_STRUCTURE = re.compile(rb'\n\{"type":"(?:run_start|checkpoint)",')
_OVERLAP = 32  # longer than any match: a match cut by a chunk's end is found in the next
_KIND_AT = 10  # the byte after '\n{"type":"': s(tep), r(un_start), c(heckpoint)
_STEP, _RUN_START, _CHECKPOINT = ord("s"), ord("r"), ord("c")


class TraceIndex:
    """Finds runs, steps and checkpoints by the bytes their lines start with.

    Everything it knows is a few flat arrays of 8-byte offsets, whatever the number of
    runs: ``steps`` holds every step of the file in order, ``run_starts[r]`` where run r's
    ``run_start`` line is (-1: steps with no ``run_start``) and ``run_first[r]`` the index
    in ``steps`` of its first step; checkpoints are their offsets and the number of steps
    of the file before each. A run's object (``TraceRun``) is made only when asked for."""

    def __init__(self, source: _Source, start: int):
        self.source = source
        self.start = start  # first byte after the header line
        self.position = start  # next byte to scan
        self.steps = array("q")
        self.run_starts = array("q")
        self.run_first = array("q")
        self.checkpoint_offsets = array("q")
        self.checkpoint_positions = array("q")  # steps of the file before each checkpoint
        self.end: int | None = None  # where the last run ends, once the index is done
        self.complete = False
        self.lock = threading.Condition()
        self._listeners: list[Callable[[], None]] = []
        self._stop = False
        self._thread: threading.Thread | None = None
        self._last_notice = 0.0
        self.cpu_seconds = 0.0  # CPU time the background thread spent indexing
        self._first_structure: int | None = None
        self._checked_outside = False
        # Following a file that is still being written (agentdbg.trace.follow): while
        # ``live``, the last run's end is not known and ``complete`` means caught up.
        self.follower: Follower | None = None
        self.live = False
        self.settled_step = -1  # while live: the newest step (index in ``steps``) known whole
        self.ended_run = -1  # while live: the newest run whose run_end has been read

    @property
    def run_count(self) -> int:
        with self.lock:
            return len(self.run_starts)

    # -- one run's share of the arrays (call with the lock held) ------------------------
    def _run_steps(self, run: int) -> tuple[int, int]:
        """[first, stop) indexes into ``steps`` of run ``run``'s steps found so far."""
        stop = self.run_first[run + 1] if run + 1 < len(self.run_first) else len(self.steps)
        return self.run_first[run], stop

    def _run_end(self, run: int) -> int | None:
        """Where run ``run`` ends: the next run's start, or the file's end once known (a
        followed run that has ended ends where the file ends now)."""
        if run + 1 < len(self.run_starts):
            return self.run_starts[run + 1]
        if self.end is None and run == self.ended_run:
            return self.source.data_end
        return self.end

    def _published(self, run: int) -> int:
        """Steps whose lines are all known (the last one needs the next step or the end,
        or, in a followed file, to be known whole: see ``agentdbg.trace.follow``)."""
        first, stop = self._run_steps(run)
        count = stop - first
        if self._run_end(run) is not None or (stop > first and stop - 1 <= self.settled_step):
            return count
        return max(0, count - 1)

    def _run_checkpoints(self, run: int) -> tuple[int, int]:
        """[first, stop) indexes of the checkpoints between run ``run``'s start and its end."""
        low = max(self.run_starts[run], 0)
        high = self.run_starts[run + 1] if run + 1 < len(self.run_starts) else None
        first = bisect.bisect_left(self.checkpoint_offsets, low)
        stop = len(self.checkpoint_offsets) if high is None else bisect.bisect_left(self.checkpoint_offsets, high)
        return first, stop

    @property
    def progress(self) -> float:
        span = self.source.data_end - self.start
        return 1.0 if self.complete or span <= 0 else min(1.0, (self.position - self.start) / span)

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (from the index thread) as runs and steps appear, at most
        every 50 ms, and once more when the index is complete."""
        self._listeners.append(listener)

    def _notify(self, final: bool = False) -> None:
        now = time.perf_counter()
        if not final and now - self._last_notice < NOTIFY_INTERVAL:
            return
        self._last_notice = now
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener's bug must not stop the index
                pass

    def scan_first(self) -> None:
        if self.start == 0 and self.source.pread(len(fmt.RUN_START_PREFIX), 0) == fmt.RUN_START_PREFIX:
            self._merge([], [(0, _RUN_START)])  # a headerless trace: the first line has no newline before it
        elif self.start == len(_BOM) and self.source.pread(len(fmt.RUN_START_PREFIX), self.start) == fmt.RUN_START_PREFIX:
            self._merge([], [(self.start, _RUN_START)])
        self._scan_chunk(FIRST_CHUNK_BYTES)
        if self.position >= self.source.data_end:
            self._caught_up()

    def start_thread(self) -> None:
        if self.complete and self.follower is None:
            return
        self._thread = threading.Thread(target=self._run, name=f"agentdbg-index {self.source.path}", daemon=True)
        self._thread.start()

    def scan_all(self) -> None:
        if self.follower is None:
            self._scan_apart()
        while not self.complete and not self._stop:
            self._scan_chunk(CHUNK_BYTES)
            if self.position >= self.source.data_end:
                self._caught_up()

    def _caught_up(self) -> None:
        """The index has reached the end of the file: done, unless the file is followed
        and still being written (then its last run stays open)."""
        if self.follower is not None and self.follower.begin():
            return
        self._finish()

    def _run(self) -> None:
        started = time.thread_time()
        try:
            self.scan_all()
            if self.follower is not None:
                self.follower.run()  # until the index stops
        except Exception as exc:  # a read error stops the index, never the program
            if not self.source.closed:
                self.source.problems.add(None, f"indexing stopped at byte {self.position:,}: {type(exc).__name__}: {exc}")
            self._finish(failed=True)
        finally:
            self.cpu_seconds = time.thread_time() - started

    def stop(self) -> None:
        """Stop indexing (on close): waiters wake up, nothing more is read."""
        self._stop = True
        if self.follower is not None:
            self.follower.wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if not self.complete or self.end is None:
            self._finish(failed=True)

    def grow(self, data_end: int) -> None:
        """A followed file has more complete lines, up to ``data_end``: index them. Done
        under the lock, so no reader sees a step running into lines not indexed yet. A
        file that had been finished is open again (its last run stays as it was)."""
        with self.lock:
            if self.end is not None:
                self.end = None
                self.live = True
                self.settled_step = len(self.steps) - 1
                self.ended_run = len(self.run_starts) - 1
            # The scan starts at the newline before the first new line.
            self.position = min(self.position, self.source.data_end)
            self.source.data_end = data_end
            self.source.tail_problem = None
            while self.position < data_end and not self._stop:
                self._scan_chunk(CHUNK_BYTES, notify=False)
            self.complete = True
            self.lock.notify_all()

    def settle(self, ended: bool) -> None:
        """Every line of the followed file so far is known to form whole steps (``ended``:
        its last run has ended)."""
        with self.lock:
            self.settled_step = len(self.steps) - 1
            if ended:
                self.ended_run = len(self.run_starts) - 1
            self.lock.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: self.complete, timeout)

    def _scan_chunk(self, size: int, notify: bool = True) -> None:
        end = self.source.data_end
        position = self.position
        scan_from = position - 1 if position > 0 else 0
        data = self.source.pread(min(size + _OVERLAP, end - scan_from), scan_from) if end > scan_from else b""
        if not data:
            self.position = end
            return
        steps, others, self.position = _structure(data, scan_from, end)
        self._merge(steps, others)
        if notify:
            self._notify()

    def _scan_apart(self) -> None:
        """Index the rest of a big file in the worker processes (``agentdbg.trace.workers``),
        when there are some: each finds the runs, steps and checkpoints of a few MiB, and
        their findings are added in order, exactly as ``_scan_chunk`` would find them. Any
        piece they cannot read is left to the ordinary scan, from there on."""
        pool = workers.pool() if self.source.data_end - self.position > workers.PARALLEL_BYTES else None
        file_at = self.source.file_at() if pool is not None else None
        if pool is None or file_at is None:
            return
        end = self.source.data_end
        size = APART_BYTES
        starts = iter(range(self.position, end, size))
        pending: deque[tuple[int, Future[Any]]] = deque()
        try:
            while not self._stop:
                while len(pending) < workers.IN_FLIGHT:
                    start = next(starts, None)
                    if start is None:
                        break
                    pending.append((start, pool.submit(_structure_there, file_at, start, size, end)))
                if not pending:
                    return
                start, future = pending.popleft()
                try:
                    found = future.result()
                except BrokenProcessPool:
                    raise
                except Exception:  # (a worker's own failure: the ordinary scan goes on from here)
                    return
                if found is None or start != self.position:
                    return
                steps, others, position = found
                self._merge(array("q", steps), others)
                self.position = position
                self._notify()
        except BrokenProcessPool:
            workers.lost()
        finally:
            for _, future in pending:
                future.cancel()

    def _merge(self, steps: Sequence[int], others: list[tuple[int, int]]) -> None:
        """Add one chunk's findings (sorted offsets) to the arrays, under the lock: linear
        in what the chunk holds, however many runs it opens."""
        with self.lock:
            if self._first_structure is None and (steps or others):
                self._first_structure = min([*steps[:1], *(o for o, _ in others[:1])])
            base = len(self.steps)
            if not self.run_starts and steps:
                first_run = next((o for o, kind in others if kind == _RUN_START), None)
                if first_run is None or steps[0] < first_run:  # steps with no run_start before them
                    self.run_starts.append(-1)
                    self.run_first.append(base)
            at = 0
            for offset, kind in others:
                at = bisect.bisect_left(steps, offset, at)
                if kind == _RUN_START:
                    self.run_starts.append(offset)
                    self.run_first.append(base + at)
                elif self.run_starts:  # a checkpoint outside any run has nothing to speed up
                    self.checkpoint_offsets.append(offset)
                    self.checkpoint_positions.append(base + at)
            self.steps.extend(steps)
            self.lock.notify_all()

    def _finish(self, failed: bool = False) -> None:
        with self.lock:
            # After a failure the last step ends where the scan stopped (a cut line
            # there is reported when the step is read).
            self.end = self.source.data_end if not failed else min(self.position, self.source.data_end)
            self.position = self.source.data_end
            self.complete = True
            self.live = False
            self.lock.notify_all()
        if not failed and not self.source.closed:
            try:
                # A last line still being written is not damage: it is left out for now.
                if self.source.tail_problem is not None and not writer_holds(self.source.fd):
                    self.source.report(*self.source.tail_problem)
                if not self._checked_outside:
                    self._check_outside_runs()
            except (OSError, ValueError):
                pass
        self._notify(final=True)

    def _check_outside_runs(self) -> None:
        """Lines between the header and the first run belong to no run: say so."""
        self._checked_outside = True
        source = self.source
        first = self._first_structure if self._first_structure is not None else source.data_end
        if self.run_starts and self.run_starts[0] < 0:
            source.report(self.steps[0], "steps before any run_start: the run's task and settings are unknown")
        if first <= self.start:
            return
        if first - self.start > 16 * source.max_line_bytes:
            source.report(self.start, f"{_size_text(first - self.start)} before the first run could not be read as events")
            return
        unshaped = 0  # structure lines not in the layout the index finds (spaces, "type" not first)
        for line in source.lines(self.start, first):
            event = source.decode(line, 0)
            if event is None:
                continue
            if event.type in _STRUCTURE_TYPES:
                unshaped += 1
                if unshaped == 1:
                    source.report(line.offset, f"a {event.type} line not in the trace layout: agentdbg finds runs and "
                                  f'steps by lines that begin exactly {{"type":"{event.type}", (compact JSON, '
                                  '"type" first, as agentdbg.trace.format.event_line writes them); this one has '
                                  "spaces or another key first, so no run of the file can be found")
                continue
            if not unshaped:
                source.report(line.offset, f"a {event.type} event outside any run (no run_start before it): ignored")
        if unshaped > 1:
            source.report(self.start, f"{unshaped - 1:,} more run_start, step or checkpoint lines not in the trace layout")


def _structure(data: bytes, scan_from: int, end: int) -> tuple[list[int], list[tuple[int, int]], int]:
    """The steps and the other structure lines (offset, kind) that begin in ``data`` (read
    from ``scan_from``, the newline before the first line to look at; ``_OVERLAP`` bytes
    more than what is looked at, unless it reaches ``end``), and where the next scan starts."""
    # Matches start at the newline before a line; the scan starts at the newline that
    # ends the header (or before the first line) so the first run is found too.
    limit = len(data) if scan_from + len(data) >= end else len(data) - _OVERLAP
    base = scan_from + 1
    # Step lines apart from the rest (far fewer): one pass over a million offsets, not three.
    steps = [m.start() + base for m in _STEP_LINES.finditer(data, 0, limit + _STEP_LINE_BYTES - 1)]
    while steps and steps[-1] - base >= limit:
        steps.pop()
    others = [(m.start() + base, data[m.start() + _KIND_AT]) for m in _OTHER_STRUCTURE.finditer(data)
              if m.start() < limit]
    return steps, others, scan_from + limit + 1


def _structure_there(at: workers.FileAt, position: int, size: int,
                     end: int) -> tuple[bytes, list[tuple[int, int]], int] | None:
    """``_structure`` of the ``size`` bytes at ``position`` in a worker process, the steps
    as an array's bytes (None: the file cannot be read there as it was)."""
    scan_from = position - 1 if position > 0 else 0
    data = workers.read_there(at, min(size + _OVERLAP, end - scan_from), scan_from)
    if not data:
        return None
    steps, others, following = _structure(data, scan_from, end)
    return array("q", steps).tobytes(), others, following
