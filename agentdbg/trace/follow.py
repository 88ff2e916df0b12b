"""Follow a trace file while it is being written: the reader's view grows with the file.

``open_trace(path, follow=True)`` gives the index a ``Follower``. Once the index has
reached the end of the file, the follower looks at the file's size on the index's thread:
every 20 ms while it grows, every 50 ms while it is live but quiet, backing off to once a
second once it is finished (someone may append another run). New complete lines
are indexed as they come; a last line without its newline is waited for.

**Live.** The file is live while a writer holds it (``agentdbg.trace.locking``), or,
for writers that take no lock, while its last run has no ``run_end`` and it grew in the
last five seconds. While it is live, the last run stays open (``complete`` is False, its
end unknown). Once the writer has gone, the file is finished as any file is: a last
line cut off then is damage, reported as it always is.

**Whole steps.** A step is counted (``step_count``) once its lines are all written: the
next step began, or its last line is one a writer ends a step with (``guards``,
``guard_tripped``, a ``checkpoint``) and nothing more came for 25 ms, or ``run_end``, or
the writer says so (``TraceDocument.refresh(settled=True)``: an attached agent tells the
debugger when a step is flushed). Until then, ``TraceRun.pending_record()`` shows it as
far as it goes. A step that grows after it was counted (a line its writer adds later) is
read again: records are kept with the offset where they ended.

**Cut or replaced.** A file that shrinks (truncated, or emptied in place), or whose name
now leads to another file, is reported as a problem and no longer followed; what was read
stays shown. A file that is removed is still followed through the open descriptor (its
writer may still be writing to it).
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import TYPE_CHECKING

from agentdbg.trace.locking import writer_holds
from agentdbg.trace.source import _find_data_end

if TYPE_CHECKING:
    from agentdbg.trace.index import TraceIndex

FAST = 0.02  # seconds between looks while the file grows
QUIET = 0.05  # backed off to while it is live but quiet
FINISHED = 1.0  # once finished: whether someone appends more
FAST_FOR = 2.0  # seconds after the last growth during which looks stay fast
SETTLE = 0.025  # a step whose last line ends it is whole after this long without growth
RECENT = 5.0  # a file without a writer's lock is live this long after it last grew
TAIL_BYTES = 4096  # the last line is looked at when it is at most this long

_KIND = re.compile(rb'\{"type":"(\w+)"')
_CLOSERS = {b"guards", b"guard_tripped", b"checkpoint"}  # a writer ends a step with these
_RUN_END = b"run_end"


class Follower:
    """Watches the file of ``index`` for growth, truncation and its writer (see module)."""

    def __init__(self, index: TraceIndex, opened: os.stat_result):
        self.index = index
        self.source = index.source
        self.stopped: str | None = None  # why following stopped for good
        self.removed = False  # the path no longer names the file (it is read through its descriptor)
        self.writer: bool | None = None  # a writer holds the file (None: the filesystem cannot tell)
        self.grown_at = opened.st_mtime  # wall clock, as file times are
        self._identity = (opened.st_dev, opened.st_ino)
        self._tail = b""  # the kind of the last complete line
        self._lock = threading.Lock()  # one look at a time: the index thread, or refresh() from elsewhere
        self._wake = threading.Event()

    # -- the index thread -----------------------------------------------------------------
    def begin(self) -> bool:
        """The index has reached the end of the file: True (and the file open) when it is
        live, False when it is finished as it is."""
        with self._lock:
            self.writer = writer_holds(self.source.fd)
            self._tail = self._last_line_kind()
            if not self._is_live():
                return False
            index = self.index
            with index.lock:
                index.live = True
                index.complete = True
                index.lock.notify_all()
            self._settle(time.time())
        try:
            index._check_outside_runs()
        except (OSError, ValueError):
            pass
        index._notify(final=True)
        return True

    def run(self) -> None:
        """Look at the file until the index stops: fast while it grows, slower when quiet."""
        interval = FAST
        while not self.index._stop and self.stopped is None:
            self._wake.wait(interval)
            self._wake.clear()
            if self.index._stop:
                return
            self.refresh()
            quiet = time.time() - self.grown_at
            if quiet < FAST_FOR or self._tail in _CLOSERS and self.index.settled_step < len(self.index.steps) - 1:
                interval = FAST
            else:
                interval = min(max(interval, FAST) * 2, QUIET if self.index.live else FINISHED)

    def wake(self) -> None:
        self._wake.set()

    # -- one look ---------------------------------------------------------------------------
    def refresh(self, settled: bool = False) -> bool:
        """Look at the file now: index what was appended, settle the last step, notice a
        writer that has gone or come back, a file cut or replaced. True when it grew."""
        with self._lock:
            if self.stopped is not None or self.source.closed:
                return False
            index, source = self.index, self.source
            try:
                info = os.fstat(source.fd)
            except OSError as exc:
                self._stop(f"the file can no longer be read ({exc.strerror}): no longer followed")
                return False
            if info.st_size < source.size:
                self._stop(f"the file was truncated while it was followed (from {source.size:,} to "
                           f"{info.st_size:,} bytes): what was read before is shown; open it again to read it anew")
                return False
            if self._replaced():
                return False
            now = time.time()
            grew = False
            if info.st_size > source.size:
                source.size = info.st_size
                self.grown_at = now
                end = self._complete_lines_end(info.st_size)
                if end > source.data_end:
                    index.grow(end)
                    self._tail = self._last_line_kind()
                    grew = True
            self.writer = writer_holds(source.fd)
            changed = grew
            if index.live:
                before = (index.settled_step, index.ended_run)
                if settled:
                    index.settle(self._tail == _RUN_END)
                else:
                    self._settle(now)
                changed = changed or (index.settled_step, index.ended_run) != before
                if not self._is_live():
                    self._finish()
                    changed = True
            elif grew or self.writer:  # it had finished, and is being written again
                index.grow(source.data_end)  # opens it again (what was new is indexed already)
                if self._is_live():
                    self._settle(now)
                else:
                    self._finish()
                changed = True
        if changed:
            index._notify(final=True)
        return grew

    def _settle(self, now: float) -> None:
        index = self.index
        if self._tail == _RUN_END:
            index.settle(ended=True)
        elif self._tail in _CLOSERS and now - self.grown_at >= SETTLE:
            index.settle(ended=False)

    def _is_live(self) -> bool:
        if self.writer:
            return True
        index = self.index
        ended = self._tail == _RUN_END or (index.ended_run >= 0 and index.ended_run == len(index.run_starts) - 1)
        return not ended and time.time() - self.grown_at < RECENT

    def _finish(self) -> None:
        """The writer has gone: what is there is all there is. A last line cut off now is
        damage (reported as usual)."""
        source = self.source
        before, source.data_end = source.data_end, source.size
        _find_data_end(source)  # a last line that is whole JSON without its newline is read
        end, source.data_end, cut = source.data_end, before, source.tail_problem
        if end > before:
            self.index.grow(end)
        source.tail_problem = cut
        self.index._finish()

    def _stop(self, message: str) -> None:
        self.stopped = message
        self.source.problems.add(None, message)
        index = self.index
        index.live = False
        index._finish(failed=True)

    def _replaced(self) -> bool:
        try:
            named = os.stat(self.source.path)
        except FileNotFoundError:
            self.removed = True  # still read through the descriptor: its writer may go on
            return False
        except OSError:
            return False
        if (named.st_dev, named.st_ino) != self._identity:
            self._stop("the file was replaced by another while it was followed: the file as it was is shown; "
                       "open it again to read the new one")
            return True
        self.removed = False
        return False

    # -- reading the file's end -------------------------------------------------------------
    def _complete_lines_end(self, size: int) -> int:
        """Where the complete lines end: just after the last newline before ``size``."""
        source = self.source
        position = size
        floor = source.data_end
        while position > floor:
            start = max(floor, position - 64 * 1024)
            block = source.pread(position - start, start)
            found = block.rfind(b"\n")
            if found != -1:
                return start + found + 1
            position = start
        return floor

    def _last_line_kind(self) -> bytes:
        """The ``type`` of the last complete line (b"" when it cannot be told cheaply)."""
        source = self.source
        end = source.data_end
        start = max(self.index.start, end - TAIL_BYTES)
        if end <= start:
            return b""
        block = source.pread(end - start, start)
        if block.endswith(b"\n"):
            block = block[:-1]
        newline = block.rfind(b"\n")
        if newline == -1 and start > self.index.start:
            return b""  # a last line longer than we look at: not one a writer ends a step with
        found = _KIND.match(block, newline + 1)
        return found.group(1) if found else b""
