"""A trace file's bytes: reading lines by offset (``pread``), decoding a step's lines
into events, and the problems found doing so."""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.errors import Problem
from agentdbg.files import size_text
from agentdbg.trace import format as fmt
from agentdbg.trace.workers import FileAt

MAX_LINE_BYTES = 8 * 1024 * 1024  # longer lines are reported and shown as a preview, not decoded
READ_BLOCK = 1024 * 1024
PREVIEW_CHARS = 300
MAX_STEP_EVENTS = 10_000  # lines of one step decoded; the rest are counted and reported
MAX_PROBLEMS = 1000  # then one line says how many more were found
_BOM = b"\xef\xbb\xbf"


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
        self._file_at: FileAt | None = None
        self._looked_up = False

    def file_at(self) -> FileAt | None:
        """Where another process can read this file itself (None: nowhere)."""
        if not self._looked_up:
            self._looked_up = True
            try:
                held = os.fstat(self.fd)
                self._file_at = FileAt(os.path.abspath(self.path), self.fd, held.st_dev, held.st_ino)
            except (OSError, ValueError):
                self._file_at = None
        return self._file_at

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
