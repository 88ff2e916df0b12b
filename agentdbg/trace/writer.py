"""Write trace files: one event per line, appended and flushed as it happens.

A recording killed at any moment (SIGKILL, a crash) leaves a file that opens with every
complete event: each line goes to the operating system in a single write as soon as the
event exists, so at most the line being written is lost. With ``fsync=True`` each step
is also forced to disk when the next one begins, which covers power loss too; so is an
``operation`` line before its call runs, and that call's result before it is returned.

The writer also folds the run's derived state as it goes and writes a ``checkpoint``
every ``checkpoint_every`` steps (just before the next step's ``step`` line), so a reader
can rebuild the state at any step from the nearest checkpoint instead of from step 1.

A writer holds its file exclusively (``agentdbg.trace.locking``) from opening to closing:
two writers never interleave lines. A write that fails (disk full, an I/O error) cuts the
half-written line off and raises ``TraceWriteError``, which says how much the trace keeps.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.model.state import RunInfo, RunState, StepRecord
from agentdbg.outputs import temporary_beside
from agentdbg.trace import format as fmt
from agentdbg.trace.locking import TraceBusyError, lock_for_writing

__all__ = ["TraceBusyError", "TraceExistsError", "TraceWriteError", "TraceWriter", "WriteSummary", "write_trace"]


@dataclass
class WriteSummary:
    """What ``write_trace`` wrote."""

    path: str
    runs: int = 0
    steps: int = 0
    events: int = 0
    checkpoints: int = 0


class TraceExistsError(ValueError):
    """``mode="create"`` and the file already holds something."""


class TraceWriteError(OSError):
    """Writing failed part-way: disk full, an I/O error, a file size limit. The trace keeps
    every complete line written before; ``events_kept`` says how many events of this
    writer that is (None when unknown: a buffered writer)."""

    def __init__(self, path: str | Path, cause: OSError, events_kept: int | None, appended: bool = False):
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.events_kept = events_kept
        self.appended = appended

    def __str__(self) -> str:
        text = f"cannot write {self.filename}: {self.strerror}"
        kept = self.events_kept
        if kept is None:
            return text
        events = "no events" if kept == 0 else f"the first {kept:,} event" + ("" if kept == 1 else "s")
        if self.appended:
            return f"{text} (the trace holds its earlier runs and {events} of this one)"
        return f"{text} (the trace holds {events})"


WRITE_MODES = ("append", "create", "replace")


class TraceWriter:
    """Append events to a trace file, holding it exclusively while writing.

    ``mode`` says what to do with a file that already holds something: ``"append"`` (the
    default) adds runs to an existing trace (a file may hold several runs) and refuses any
    other file; ``"create"`` refuses it (``TraceExistsError``); ``"replace"`` empties it.
    A new or empty file gets the header line first.

    The file is opened once (never truncated on opening), then locked (``flock``, see
    ``agentdbg.trace.locking``), and only then checked, emptied or appended to: a second
    writer gets ``TraceBusyError`` and changes nothing. A symlink is followed only to an
    existing regular file (``target`` is the file written); a dangling one, or one to a
    pipe or a device, is refused. A failed write (``TraceWriteError``) cuts the file back
    to its last complete line and every later write fails the same way.

    ``flush=False`` buffers writes, for generating big files fast when nothing can be lost
    halfway (``write_trace`` writes to a temporary file and renames it)."""

    def __init__(self, path: str | Path, *, mode: str = "append", checkpoint_every: int = fmt.CHECKPOINT_EVERY,
                 fsync: bool = False, flush: bool = True, header: dict[str, Any] | None = None):
        if mode not in WRITE_MODES:
            raise ValueError(f"mode must be one of {', '.join(WRITE_MODES)}, got {mode!r}")
        if checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be at least 1, got {checkpoint_every}")
        self.path = Path(path)
        self.mode = mode
        self.checkpoint_every = checkpoint_every
        self.fsync = fsync
        self.events_written = 0
        self.steps_written = 0
        self.checkpoints_written = 0
        self.runs_written = 0
        self.failed: TraceWriteError | None = None
        self._buffered = not flush
        fd, self.target, self.locked = _open_locked(self.path, mode)
        try:
            existing = self._prepare(fd)
            self._file = open(fd, "ab", buffering=1 << 20 if self._buffered else 0, closefd=True)  # noqa: SIM115
        except BaseException:
            os.close(fd)
            raise
        self._appended = existing > 0
        self._complete = existing  # bytes up to the end of the last line written whole
        try:
            if existing == 0:
                self._write(fmt.header_line(**(header or {})).encode("utf-8"))
            elif os.pread(fd, 1, existing - 1) != b"\n":
                # A previous recording was cut mid-line: end that line, so it stays one
                # damaged line instead of swallowing the first event written now.
                self._write(b"\n")
        except BaseException:
            self._file.close()
            raise
        self._info = RunInfo()
        self._state = RunState()
        self._step_events: list[ev.Event] = []
        self._step = 0  # steps of the current run written so far

    def _prepare(self, fd: int) -> int:
        """Under the lock: refuse, empty or check what the file holds; its size after."""
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        if self.mode == "create":
            raise TraceExistsError(f"{self.path}: exists and is not empty")
        from agentdbg.trace.reader import SNIFF_BYTES, _head_kind  # the test reader.sniff makes

        is_trace = _head_kind(os.pread(fd, SNIFF_BYTES, 0)) is not None
        if self.mode == "replace":
            if self.target != self.path and not is_trace:
                raise ValueError(f"{self.path}: is a symlink to {self.target}, which is not an agentdbg trace; "
                                 "refusing to replace it through the link")
            os.ftruncate(fd, 0)
            return 0
        if not is_trace:
            raise ValueError(f"{self.path}: exists and is not an agentdbg trace; refusing to append to it")
        return size

    def _write(self, data: bytes) -> None:
        if self.failed is not None:
            raise self.failed
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                if written is None:  # non-blocking file with nothing written: try again
                    continue
                view = view[written:]
        except OSError as exc:
            raise self._failure(exc) from exc
        except BaseException:  # Ctrl-C inside a write: no half line either
            self._cut_back()
            raise
        self._complete += len(data)

    def write(self, event: ev.Event) -> None:
        """Append one event (and a checkpoint before a step line when one is due)."""
        if self.failed is not None:
            raise self.failed
        if isinstance(event, ev.Checkpoint):
            return  # the writer makes its own, from the state it folds
        if isinstance(event, ev.RunStart):
            self._close_step()
            self._info = RunInfo.from_event(event)
            self._state = RunState.initial(self._info)
            self._step = 0
            self.runs_written += 1
        elif isinstance(event, ev.StepStart):
            self._close_step()
            if self._step and self._step % self.checkpoint_every == 0:
                self._write(fmt.event_line(ev.Checkpoint(step=self._step, state=self._state.to_dict())).encode("utf-8"))
                self.checkpoints_written += 1
            if self.fsync:
                self._sync()
            self._step += 1
            self.steps_written += 1
        if self._step:
            self._step_events.append(event)
        self._write(fmt.event_line(event).encode("utf-8"))
        self.events_written += 1
        if self.fsync and (isinstance(event, (ev.RunEnd, ev.Operation))
                           or (isinstance(event, ev.Observation) and event.key)):
            self._sync()  # an operation's intent before it runs, its result before it is returned

    def write_all(self, events: Iterable[ev.Event]) -> None:
        for event in events:
            self.write(event)

    __call__ = write  # usable directly as an ``on_event`` callback

    def _close_step(self) -> None:
        if self._step_events:
            record = StepRecord.from_events(self._step, self._step_events)
            self._state = self._state.advance(record)
            self._step_events = []

    def _sync(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: OSError) -> TraceWriteError:
        """Remember the first failure (every later write raises it) and cut a half line off."""
        self._cut_back()
        if self.failed is None:
            kept = None if self._buffered else self.events_written
            self.failed = TraceWriteError(self.path, exc, kept, self._appended)
        return self.failed

    def _cut_back(self) -> None:
        if self._buffered:
            return  # what reached the file is unknown; write_trace discards it anyway
        try:
            if os.fstat(self._file.fileno()).st_size > self._complete:
                os.ftruncate(self._file.fileno(), self._complete)
        except OSError:
            pass  # the cut line stays; a reader reports it as incomplete

    @property
    def end_offset(self) -> int:
        """Where the last line written whole ends in the file (the file's size, as this
        writer is its only one): a reader that has read this far has every event written."""
        return self._complete

    def close(self) -> None:
        """Flush (and with ``fsync``, force to disk), then release the file. Raises
        ``TraceWriteError`` if that fails, unless a write already reported a failure."""
        if self._file.closed:
            return
        error = None
        if self.failed is None:
            try:
                self._file.flush()
                if self.fsync:
                    os.fsync(self._file.fileno())
            except OSError as exc:
                error = self._failure(exc)
        try:
            self._file.close()  # closing releases the lock
        except OSError as exc:
            if self.failed is None:
                self.failed = error = TraceWriteError(self.path, exc, None, self._appended)
        if error is not None:
            raise error

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_OPEN_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _open_locked(path: Path, mode: str) -> tuple[int, Path, bool]:
    """Open ``path`` for writing and lock it: (fd, the file written, whether it is locked).

    The lock is checked to be on the file the path still names: a file replaced (renamed
    over) or removed between opening and locking is let go and the new one opened."""
    for _ in range(5):
        fd, target = _open_output(path, mode)
        try:
            locked = lock_for_writing(fd, path)
            if _names(target, fd):
                os.set_blocking(fd, True)
                return fd, target, locked
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise ValueError(f"{path}: keeps being replaced by another program; not written")


def _open_output(path: Path, mode: str) -> tuple[int, Path]:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        return _open_through_link(path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path}: is {_kind(info.st_mode)}; a trace is written to a regular file")
    try:
        fd = os.open(path, _OPEN_FLAGS | os.O_CREAT, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a symlink since lstat
            return _open_through_link(path)
        raise
    return _regular(fd, path, path), path


def _open_through_link(path: Path) -> tuple[int, Path]:
    """A symlink leads only to an existing regular file: nothing is created through it."""
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        raise ValueError(f"{path}: is a symlink to {target}, which does not exist; "
                         "a trace is not created through a symlink") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path}: is a symlink to {target}, {_kind(info.st_mode)}; "
                         "a trace is written to a regular file")
    return _regular(os.open(target, _OPEN_FLAGS), path, target), target


def _regular(fd: int, path: Path, target: Path) -> int:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # swapped for something else since it was looked at
        os.close(fd)
        shown = f"{path}: is a symlink to {target}, {_kind(mode)}" if target != path else f"{path}: is {_kind(mode)}"
        raise ValueError(f"{shown}; a trace is written to a regular file")
    return fd


def _names(path: Path, fd: int) -> bool:
    """True when ``path`` (not followed) is still the file open at ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def write_trace(path: str | Path, runs: Iterable[Iterable[ev.Event]], *,
                checkpoint_every: int = fmt.CHECKPOINT_EVERY, header: dict[str, Any] | None = None) -> WriteSummary:
    """Write ``runs`` (each an iterable of one run's events) as a new trace file at ``path``.

    The file is written beside ``path`` under a temporary name and renamed into place at
    the end, so ``path`` never holds half a conversion; an existing file is replaced, unless
    another writer holds it (``TraceBusyError``). A symlink at ``path`` is replaced, not
    written through."""
    path = Path(path)
    summary = WriteSummary(str(path))
    handle, temporary = temporary_beside(path)
    try:
        os.close(handle)
        os.unlink(temporary)  # the writer creates it, with its header
        with TraceWriter(temporary, mode="create", checkpoint_every=checkpoint_every, flush=False,
                         header=header) as writer:
            for run in runs:
                writer.write_all(run)
        summary.runs = writer.runs_written
        summary.steps = writer.steps_written
        summary.events = writer.events_written
        summary.checkpoints = writer.checkpoints_written
        _replace_unless_written(temporary, path)
    except TraceWriteError as exc:  # the temporary file is gone: name no part of it
        temporary.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror) from exc
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return summary


def _replace_unless_written(source: Path, destination: Path) -> None:
    """``os.replace``, holding the writer's lock on the file replaced, so that a trace
    still being recorded is never swapped out from under its writer."""
    fd = None
    try:
        if stat.S_ISREG(os.lstat(destination).st_mode):
            fd = os.open(destination, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        fd = None  # nothing there, a symlink (replaced itself), or unreadable: nothing to hold
    try:
        if fd is not None:
            lock_for_writing(fd, destination)
        os.replace(source, destination)
    finally:
        if fd is not None:
            os.close(fd)
