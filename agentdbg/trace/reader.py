"""Read trace files: indexed in the background, steps read by offset, never loaded whole.

``open_trace(path)`` checks the header, indexes the first few hundred kilobytes at once
(so the first screen is ready immediately) and leaves the rest to a background thread.
The index holds only byte offsets: where each run and each step begins (the lines that
start with ``{"type":"run_start",`` and ``{"type":"step",``) and where the checkpoints
are. A step is read when it is asked for (one ``pread`` of its lines), decoded, and kept
in a bounded cache; the state at step N starts from the nearest checkpoint at or before
N and folds the few steps after it.

Damage never loses the valid part. A line that is not JSON, not UTF-8, far too long, or
not a valid event becomes a ``Problem`` (file, line, what is wrong) and the rest of the
file reads on; a recording cut off mid-line opens with every complete event. Problems are
found as the file is read: the index reports what it sees (a cut-off last line, data
outside any run), decoding a step reports what is wrong inside it. Nothing in a trace is
ever executed: lines are parsed with ``json`` only.

Errors: ``open_trace`` raises ``agentdbg.errors.OpenError`` (a ``ValueError``) when the
path cannot be a trace at all (missing, a directory, empty, binary, no header line);
everything after a readable first line opens as a document, with problems listed.
Threads: a run can be read from any thread while the index grows. ``record(n)`` raises
``IndexError`` for a step the index has not reached yet; ``wait_for(n)`` waits for it.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from agentdbg.cache import LRUCache
from agentdbg.engine import events as ev
from agentdbg.files import OpenError, open_regular, read_head, size_text, unreadable_text
from agentdbg.model.runs import Document, Problem
from agentdbg.model.state import RunInfo, RunState, StepRecord, Tally
from agentdbg.trace import format as fmt
from agentdbg.trace import scan
from agentdbg.trace.follow import Follower
from agentdbg.trace.locking import writer_holds

SNIFF_BYTES = 64 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024  # longer lines are reported and shown as a preview, not decoded
FIRST_CHUNK_BYTES = 256 * 1024  # indexed before open_trace returns: the first screen
CHUNK_BYTES = 1024 * 1024  # then this much per step of the background index
READ_BLOCK = 1024 * 1024
PREVIEW_CHARS = 300
RECORD_CACHE = 4096  # decoded steps kept per run
FAST_FOLD_AFTER = fmt.CHECKPOINT_EVERY  # stats folds more steps than this from their bytes
MAX_STEP_EVENTS = 10_000  # lines of one step decoded; the rest are counted and reported
STATE_CACHE = 4096  # derived states kept per run
RUN_CACHE = 1024  # run objects kept (the others are made again when asked for)
MAX_PROBLEMS = 1000  # then one line says how many more were found
NOTIFY_INTERVAL = 0.05  # seconds between progress notifications (a screen need not redraw more)

_BOM = b"\xef\xbb\xbf"
_RUN_START_LINE = b"\n" + fmt.RUN_START_PREFIX
# Lines that shape the index: each match starts at the newline before the line.
_STRUCTURE = re.compile(rb'\n\{"type":"(?:step|run_start|checkpoint)",')
_STRUCTURE_TYPES = ("step", "run_start", "checkpoint")
_STEP_LINES = re.compile(rb'\n\{"type":"step",')
_STEP_LINE_BYTES = len(b'\n{"type":"step",')
_OTHER_STRUCTURE = re.compile(rb'\n\{"type":"(?:run_start|checkpoint)",')
_OVERLAP = 32  # longer than any match: a match cut by a chunk's end is found in the next
_KIND_AT = 10  # the byte after '\n{"type":"': s(tep), r(un_start), c(heckpoint)
_STEP, _RUN_START, _CHECKPOINT = ord("s"), ord("r"), ord("c")


def sniff(path: str | Path) -> bool:
    """True when ``path`` looks like an agentdbg trace (its first line is the header, or
    an agentdbg ``run_start`` event). Reads at most the first 64 KiB; a directory, a pipe
    or a device is never a trace (and never blocks)."""
    try:
        head = read_head(path, SNIFF_BYTES)
    except OpenError:
        return False
    return looks_like_trace(head)


def looks_like_trace(head: bytes) -> bool:
    """True when a file beginning with ``head`` (its first 64 KiB) is an agentdbg trace."""
    return _head_kind(head) is not None


def _head_kind(head: bytes) -> str | None:
    """``"header"``, ``"headerless"`` (events without a header line) or None. A damaged
    header still makes a trace (the reader reports it): a header whose ``format`` is not
    text or only begins with agentdbg's, or any first line when agentdbg events follow."""
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    if head.startswith(fmt.HEADER_PREFIX):
        return "header"
    if head.startswith(fmt.RUN_START_PREFIX):
        return "headerless"
    first, newline, rest = head.partition(b"\n")
    if newline and (rest.startswith(fmt.RUN_START_PREFIX) or _RUN_START_LINE in rest):
        return "header"
    first = first.strip()
    if not first.startswith(b"{"):
        return None
    try:
        data = json.loads(first.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and data.get("type") == "header":
        name = data.get("format")
        if not isinstance(name, str) or name.startswith(fmt.FORMAT_NAME):
            return "header"
    return None


_size_text = size_text


def _json_kind(value: object) -> str:
    """What a JSON value is, as JSON names it (for problem messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"a number ({value!r:.20})"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else "an array"


class ProblemLog:
    """Problems found while reading, shared by every thread; listeners hear of each one."""

    def __init__(self, path: str, items: list[Problem]):
        self.path = path
        self.items = items
        self._seen: set[tuple[int | None, str]] = set()
        self._more = 0
        self._lock = threading.Lock()
        self.listeners: list[Callable[[Problem], None]] = []

    def add(self, line: int | None, message: str) -> None:
        with self._lock:
            key = (line, message)
            if key in self._seen:
                return
            self._seen.add(key)
            if len(self.items) >= MAX_PROBLEMS:
                self._more += 1
                problem = Problem(self.path, None, f"{self._more} more problems not listed")
                if self.items[-1].message.endswith("more problems not listed"):
                    self.items[-1] = problem
                else:
                    self.items.append(problem)
            else:
                problem = Problem(self.path, line, message)
                self.items.append(problem)
            listeners = list(self.listeners)
        for listener in listeners:
            listener(problem)


@dataclass
class _Line:
    offset: int
    data: bytes | None  # None when the line is longer than the limit
    length: int
    preview: bytes = b""


class _Source:
    """The open file: bounded reads, line numbers on demand, line decoding."""

    def __init__(self, path: str, fd: int, size: int, max_line_bytes: int, problems: ProblemLog):
        self.path = path
        self.fd = fd
        self.size = size
        self.data_end = size  # where complete lines end (a cut-off last line is left out)
        self.max_line_bytes = max_line_bytes
        self.problems = problems
        self.closed = False
        self.tail_problem: tuple[int, str] | None = None  # reported once the index is done
        self._marks_at = [0]  # offsets with a known count of newlines before them
        self._marks_lines = [0]
        self._marks_lock = threading.Lock()

    def pread(self, size: int, offset: int) -> bytes:
        if self.closed:
            raise ValueError(f"{self.path}: the trace is closed")
        return os.pread(self.fd, size, offset)

    def line_number(self, offset: int) -> int:
        """The 1-based line that ``offset`` is on; counts newlines once, from known marks."""
        with self._marks_lock:
            at = bisect.bisect_right(self._marks_at, offset) - 1
            position, lines = self._marks_at[at], self._marks_lines[at]
        while position < offset:
            block = self.pread(min(READ_BLOCK, offset - position), position)
            if not block:
                break
            lines += block.count(b"\n")
            position += len(block)
            with self._marks_lock:
                where = bisect.bisect_left(self._marks_at, position)
                if where == len(self._marks_at) or self._marks_at[where] != position:
                    self._marks_at.insert(where, position)
                    self._marks_lines.insert(where, lines)
        return lines + 1

    def report(self, offset: int, message: str) -> None:
        self.problems.add(self.line_number(offset), message)

    def lines(self, start: int, end: int, first_only: bool = False) -> Iterator[_Line]:
        """The lines in [start, end), each at most ``max_line_bytes`` long (longer ones come
        with ``data=None`` and a preview). Never holds more than one line in memory."""
        end = min(end, self.data_end)
        if not first_only and end - start <= min(self.max_line_bytes, 4 * READ_BLOCK):
            data = self.pread(end - start, start)
            position = start
            for piece in data.split(b"\n"):
                if piece:
                    yield _Line(position, piece, len(piece))
                position += len(piece) + 1
            if len(data) < end - start:
                self.report(start + len(data), "the file is shorter than when it was opened (changed on disk?)")
            return
        parts: list[bytes] = []
        length = 0
        preview: bytes | None = None  # set once the line is known to be too long
        line_start = position = start
        block_size = 16 * 1024  # a checkpoint or run_start line is usually small: start small
        while position < end:
            block = self.pread(min(block_size, end - position), position)
            block_size = READ_BLOCK
            if not block:
                self.report(position, "the file is shorter than when it was opened (changed on disk?)")
                return
            cursor = 0
            while True:
                newline = block.find(b"\n", cursor)
                piece = block[cursor:] if newline == -1 else block[cursor:newline]
                if piece:
                    length += len(piece)
                    if preview is None:
                        parts.append(piece)
                        if length > self.max_line_bytes:
                            preview = b"".join(parts)[: PREVIEW_CHARS * 4]
                            parts = []
                if newline == -1:
                    break
                if length:
                    yield _Line(line_start, None if preview is not None else b"".join(parts), length, preview or b"")
                    if first_only:
                        return
                parts, length, preview = [], 0, None
                line_start = position + newline + 1
                cursor = newline + 1
            position += len(block)
        if length:
            yield _Line(line_start, None if preview is not None else b"".join(parts), length, preview or b"")

    def decode(self, line: _Line, step: int) -> ev.Event | None:
        """One line as an event; problems are reported, and whatever can be kept is kept."""
        if line.data is None:
            preview = line.preview.decode("utf-8", "replace")[:PREVIEW_CHARS]
            kind = re.match(r'\{"type":"(\w+)"', preview)
            what = f"a {kind.group(1)} event" if kind else "a line"
            note = f"{what} of {_size_text(line.length)}, over the {_size_text(self.max_line_bytes)} limit: not decoded"
            self.report(line.offset, f"line too long: {note}")
            shown = f"{note}; it begins: {preview[:200]}…"
            return ev.RawRecord(step=step, source="line too long", data={"preview": preview, "bytes": line.length}, note=shown)
        raw = line.data
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.report(line.offset, f"not valid UTF-8 (byte {exc.start + 1} of the line); read with replacement characters")
            text = raw.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            self.report(line.offset, f"not valid JSON ({exc.msg} at column {exc.colno}); line skipped")
            return None
        except (ValueError, RecursionError) as exc:
            self.report(line.offset, f"not readable JSON ({type(exc).__name__}: {str(exc)[:100]}); line skipped")
            return None
        if isinstance(data, dict) and data.get("type") == "header":
            self._check_header(data, line.offset)
            return None
        if isinstance(data, dict) and data.get("type") == "run_start" and "tools" in data:
            data = self._declared_tools(data, line.offset)
        try:
            event = ev.event_from_dict(data)
        except ValueError as exc:
            self.report(line.offset, f"not a valid event: {exc}; kept as a raw record")
            return ev.RawRecord(step=step, source="invalid event", data=data, note=str(exc))
        return event

    def _declared_tools(self, data: dict[str, Any], offset: int) -> dict[str, Any]:
        """A run_start whose ``tools`` is damaged keeps its task and settings: the tool specs
        that can be read are kept (none when ``tools`` is not a list) and the rest reported."""
        tools = data["tools"]
        if not isinstance(tools, list):
            self.report(offset, f"run_start: 'tools' should be a list of tool specs, got {_json_kind(tools)}; "
                                "read as no tools declared")
            return {**data, "tools": []}
        kept = []
        for spec in tools:
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                kept.append(spec if isinstance(spec.get("params", {}), dict) else {**spec, "params": {}})
        if len(kept) == len(tools) and all(a is b for a, b in zip(kept, tools, strict=True)):
            return data
        odd = len(tools) - len(kept)
        if odd:
            what = f"{odd} of its {len(tools)} entries are not tool specs with a \"name\"; left out"
        else:
            what = "a tool's 'params' is not an object; read as no parameters"
        self.report(offset, f"run_start: 'tools': {what}")
        return {**data, "tools": kept}

    def _check_header(self, header: dict[str, Any], offset: int) -> None:
        """A header (the first line, or one inside a file made by concatenating traces)."""
        if header.get("format") != fmt.FORMAT_NAME:
            named = repr(header.get("format"))
            named = named if len(named) <= 80 else named[:79] + "…"
            self.report(offset, f"header names format {named}, not {fmt.FORMAT_NAME!r}; read as an agentdbg trace")
        version = header.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            self.report(offset, f"header has no valid format version ({version!r}); read as version {fmt.FORMAT_VERSION}")
        elif version > fmt.FORMAT_VERSION:
            self.report(offset, f"written by a newer agentdbg (format version {version}; this version reads "
                                f"{fmt.FORMAT_VERSION}): what can be read is shown, unknown events as raw records")

    def decode_span(self, start: int, end: int, step: int) -> list[ev.Event]:
        """The events of [start, end): at most ``MAX_STEP_EVENTS`` lines are read; the rest
        are counted, reported, and stand as one raw record saying so."""
        return list(self.iter_span(start, end, step, MAX_STEP_EVENTS))

    def iter_span(self, start: int, end: int, step: int, limit: int | None = None) -> Iterator[ev.Event]:
        declared = None
        read = 0
        for line in self.lines(start, end):
            if line.data is not None and line.data.startswith(fmt.CHECKPOINT_PREFIX):
                continue  # read only when a state is asked for
            if limit is not None and read >= limit:
                yield self._unread(line.offset, end, step, limit)
                return
            read += 1
            event = self.decode(line, step)
            if event is None:
                continue
            if isinstance(event, ev.StepStart) and declared is None:
                declared = event.step
            elif (declared is not None and event.step != declared
                  and not isinstance(event, (ev.RunEnd, ev.RawRecord, ev.StepStart, ev.Checkpoint))):
                self.report(line.offset, f"a {event.type} event of step {event.step} inside step {declared} "
                                         f"(the line opening step {event.step} is missing or damaged)")
            yield event

    def _unread(self, offset: int, end: int, step: int, limit: int) -> ev.RawRecord:
        """The lines of a step past the limit: counted (not decoded), reported, kept as a note."""
        end = min(end, self.data_end)
        position, more, last = offset, 0, b"\n"
        while position < end:
            block = self.pread(min(READ_BLOCK * 4, end - position), position)
            if not block:
                break
            more += block.count(b"\n")
            last = block[-1:]
            position += len(block)
        if last != b"\n":
            more += 1
        total = limit + more
        where = f"step {step}" if step else "the run's header (before its first step)"
        self.report(offset, f"{where} has {total:,} events; the first {limit:,} are shown, "
                            f"the other {more:,} are not read")
        return ev.RawRecord(step=step, source="events not read", data={"events": total, "read": limit},
                            note=f"{more:,} more events of this step are not read (at most {limit:,} a step)")


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
        # Matches start at the newline before a line; the scan starts at the newline that
        # ends the header (or before the first line) so the first run is found too.
        position = self.position
        scan_from = position - 1 if position > 0 else 0
        end = self.source.data_end
        data = self.source.pread(min(size + _OVERLAP, end - scan_from), scan_from) if end > scan_from else b""
        if not data:
            self.position = end
            return
        limit = len(data) if scan_from + len(data) >= end else len(data) - _OVERLAP
        base = scan_from + 1
        # Step lines apart from the rest (far fewer): one pass over a million offsets, not three.
        steps = [m.start() + base for m in _STEP_LINES.finditer(data, 0, limit + _STEP_LINE_BYTES - 1)]
        while steps and steps[-1] - base >= limit:
            steps.pop()
        others = [(m.start() + base, data[m.start() + _KIND_AT]) for m in _OTHER_STRUCTURE.finditer(data)
                  if m.start() < limit]
        self._merge(steps, others)
        self.position = scan_from + limit + 1
        if notify:
            self._notify()

    def _merge(self, steps: list[int], others: list[tuple[int, int]]) -> None:
        """Add one chunk's findings (sorted offsets) to the arrays, under the lock: linear
        in what the chunk holds, however many runs it opens."""
        with self.lock:
            if self._first_structure is None and (steps or others):
                self._first_structure = min(steps[:1] + [o for o, _ in others[:1]])
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
                    reverse: bool = False, tools: bool = False) -> Iterator[scan.Block]:
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
                           reverse=reverse, tools=tools)

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


@dataclass
class TraceDocument(Document):
    """An opened trace: runs appear (and grow) while the background index runs."""

    index: TraceIndex | None = field(default=None, repr=False)
    source: _Source | None = field(default=None, repr=False)
    problem_log: ProblemLog | None = field(default=None, repr=False)

    @property
    def complete(self) -> bool:
        return self.index is None or self.index.complete

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the whole file is indexed (a followed file: as far as it goes now);
        False on timeout."""
        return self.index is None or self.index.wait(timeout)

    # -- following a file still being written (open_trace(follow=True)) -----------------
    @property
    def following(self) -> bool:
        """The file is watched for what is appended to it (and has not been cut or replaced)."""
        follower = self.index.follower if self.index is not None else None
        return follower is not None and follower.stopped is None

    @property
    def live(self) -> bool:
        """Followed, and still being written: a writer holds it, or its last run has no
        end yet and it grew recently."""
        return self.index is not None and self.index.live

    @property
    def follow_stopped(self) -> str | None:
        """Why following stopped before the file was finished (it was truncated or
        replaced), or None."""
        follower = self.index.follower if self.index is not None else None
        return follower.stopped if follower is not None else None

    def refresh(self, settled: bool = False) -> bool:
        """Look at a followed file now rather than at the next poll; ``settled``: its
        writer says everything written so far forms whole steps. True when it grew."""
        follower = self.index.follower if self.index is not None else None
        return follower is not None and follower.refresh(settled=settled)

    def subscribe(self, on_progress: Callable[[], None] | None = None,
                  on_problem: Callable[[Problem], None] | None = None) -> None:
        """Hear of new runs and steps (``on_progress()``, at most every 50 ms and once at the
        end) and of each problem as it is found (``on_problem(problem)``). Both are called
        from the thread that found them: a screen should hand them to its own thread."""
        if on_progress is not None and self.index is not None:
            self.index.subscribe(on_progress)
        if on_problem is not None and self.problem_log is not None:
            self.problem_log.listeners.append(on_problem)

    def close(self) -> None:
        if self.index is not None:
            self.index.stop()
        if isinstance(self.runs, TraceRuns):
            self.runs.close()  # only the runs made so far: asking for the others would make them
        else:
            super().close()
        if self.source is not None and not self.source.closed:
            self.source.closed = True
            os.close(self.source.fd)

    def __enter__(self) -> TraceDocument:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_error(message: str) -> Exception:
    return OpenError(message)


def _describe_unreadable(head: bytes) -> str:
    unreadable = unreadable_text(head)
    if unreadable:
        return f"is {unreadable}, not an agentdbg trace"
    return ('not an agentdbg trace: line 1 should be the header '
            '{"type":"header","format":"agentdbg-trace","version":1}')


def open_trace(path: str | Path, *, max_line_bytes: int = MAX_LINE_BYTES, background: bool = True,
               follow: bool = False) -> TraceDocument:
    """Open a trace file. Returns at once, with the first screen's worth indexed; the rest
    is indexed by a background thread (``background=False``: before returning).
    ``follow``: keep reading what is appended while the file is being written (see
    ``agentdbg.trace.follow``; needs ``background``)."""
    name = str(path)
    fd, info = open_regular(path, what="a trace file")  # a named pipe or a device is refused, never read
    try:
        if info.st_size == 0:
            raise _open_error(f"{name}: empty file, not an agentdbg trace")
        head = os.pread(fd, SNIFF_BYTES, 0)
        kind = _head_kind(head)
        if kind is None:
            raise _open_error(f"{name}: {_describe_unreadable(head)}")
        document = TraceDocument(name, "trace")
        log = ProblemLog(name, document.problems)
        source = _Source(name, fd, info.st_size, max_line_bytes, log)
        start = _read_header(source, head, kind)
        _find_data_end(source)
        index = TraceIndex(source, start)
        if follow and background:
            index.follower = Follower(index, info)
        document.index, document.source, document.problem_log = index, source, log
        document.runs = TraceRuns(source, index)
        index.scan_first()
    except BaseException:
        os.close(fd)
        raise
    if background:
        index.start_thread()
    else:
        index.scan_all()
    return document


def _read_header(source: _Source, head: bytes, kind: str) -> int:
    """Check the header line; returns where the events begin."""
    offset = len(_BOM) if head.startswith(_BOM) else 0
    if kind == "headerless":
        source.problems.add(1, f"no header line: read as agentdbg trace events of format version {fmt.FORMAT_VERSION}")
        return offset
    newline = head.find(b"\n", offset)
    if newline == -1:
        if len(head) < source.size:
            source.problems.add(1, f"the header line is longer than {_size_text(SNIFF_BYTES)}: not read")
            position = len(head)
            while True:  # find where it ends, a block at a time
                block = source.pread(READ_BLOCK, position)
                if not block:
                    return source.size
                found = block.find(b"\n")
                if found != -1:
                    return position + found + 1
                position += len(block)
        source.problems.add(1, "the header line is incomplete (the recording was cut off at its start)")
        return source.size
    try:
        header = json.loads(head[offset:newline].decode("utf-8"))
    except (ValueError, RecursionError):
        source.problems.add(1, "the header line is not valid JSON; read as format version "
                               f"{fmt.FORMAT_VERSION}")
    else:
        if isinstance(header, dict) and header.get("type") == "header":
            source._check_header(header, offset)
        else:
            source.problems.add(1, "line 1 is not the header line (the events that follow are agentdbg's); "
                                   f"read as format version {fmt.FORMAT_VERSION}")
    return newline + 1


def _find_data_end(source: _Source) -> None:
    """Leave a cut-off last line out of the index (it is reported once the index is done)."""
    size = source.size
    if source.pread(1, size - 1) == b"\n":
        return
    position = size
    last_newline = -1
    while position > 0 and last_newline == -1:
        start = max(0, position - READ_BLOCK)
        block = source.pread(position - start, start)
        found = block.rfind(b"\n")
        if found != -1:
            last_newline = start + found
        position = start
        if size - position > source.max_line_bytes:
            break
    tail_start = last_newline + 1 if last_newline != -1 else 0
    tail_length = size - tail_start
    if tail_length <= source.max_line_bytes:
        tail = source.pread(tail_length, tail_start)
        try:
            json.loads(tail.decode("utf-8"))
            return  # a complete last event, only without its newline
        except (ValueError, RecursionError):
            pass
    if last_newline == -1:
        # No newline at all: everything is one cut-off line (the header check saw it).
        source.data_end = size
        return
    source.data_end = tail_start
    source.tail_problem = (tail_start, f"the last line is incomplete ({_size_text(tail_length)}, no end of line): "
                                       "the recording was probably cut off; it is left out")
