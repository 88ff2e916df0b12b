"""Opening a trace file: telling one by its first line, checking the header, and the
document that holds its runs and problems while the index grows."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentdbg.files import OpenError, open_regular, read_head, unreadable_text
from agentdbg.model.runs import Document, Problem
from agentdbg.trace import format as fmt
from agentdbg.trace import workers
from agentdbg.trace.follow import Follower
from agentdbg.trace.index import TraceIndex
from agentdbg.trace.run import TraceRuns
from agentdbg.trace.source import (
    _BOM,
    MAX_LINE_BYTES,
    READ_BLOCK,
    ProblemLog,
    _find_data_end,
    _size_text,
    _Source,
)

SNIFF_BYTES = 64 * 1024
_RUN_START_LINE = b"\n" + fmt.RUN_START_PREFIX




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
    if not follow:
        workers.start(info.st_size)  # (forked before the index thread starts, if at all)
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
