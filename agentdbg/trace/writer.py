"""Write trace files: one event per line, appended and flushed as it happens.

A recording killed at any moment (SIGKILL, a crash) leaves a file that opens with every
complete event: each line goes to the operating system in a single write as soon as the
event exists, so at most the line being written is lost. With ``fsync=True`` each step
is also forced to disk when the next one begins, which covers power loss too.

The writer also folds the run's derived state as it goes and writes a ``checkpoint``
every ``checkpoint_every`` steps (just before the next step's ``step`` line), so a reader
can rebuild the state at any step from the nearest checkpoint instead of from step 1.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.state import RunInfo, RunState, StepRecord
from agentdbg.trace import format as fmt


@dataclass
class WriteSummary:
    """What ``write_trace`` wrote."""

    path: str
    runs: int = 0
    steps: int = 0
    events: int = 0
    checkpoints: int = 0


class TraceWriter:
    """Append events to a trace file.

    A new (or empty) file gets the header line first; an existing trace is appended to
    (a file may hold several runs). ``flush=False`` buffers writes, for generating big
    files fast when nothing can be lost halfway (``write_trace`` writes to a temporary
    file and renames it)."""

    def __init__(self, path: str | Path, *, checkpoint_every: int = fmt.CHECKPOINT_EVERY,
                 fsync: bool = False, flush: bool = True, header: dict[str, Any] | None = None):
        if checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be at least 1, got {checkpoint_every}")
        self.path = Path(path)
        self.checkpoint_every = checkpoint_every
        self.fsync = fsync
        self.events_written = 0
        self.steps_written = 0
        self.checkpoints_written = 0
        self.runs_written = 0
        existing = self._existing_size()
        self._file = open(self.path, "ab", buffering=0 if flush else 1 << 20)  # noqa: SIM115
        try:
            if existing == 0:
                self._write(fmt.header_line(**(header or {})).encode("utf-8"))
            elif not self._ends_with_newline(existing):
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

    def _existing_size(self) -> int:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        if size and not self.path.is_file():
            raise ValueError(f"{self.path}: not a regular file; cannot append a trace to it")
        if size:
            from agentdbg.trace.reader import sniff

            if not sniff(self.path):
                raise ValueError(f"{self.path}: exists and is not an agentdbg trace; refusing to append to it")
        return size

    def _ends_with_newline(self, size: int) -> bool:
        with open(self.path, "rb") as existing:
            existing.seek(size - 1)
            return existing.read(1) == b"\n"

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._file.write(view)
            if written is None:  # non-blocking file with nothing written: try again
                continue
            view = view[written:]

    def write(self, event: ev.Event) -> None:
        """Append one event (and a checkpoint before a step line when one is due)."""
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
        if self.fsync and isinstance(event, ev.RunEnd):
            self._sync()

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
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file.closed:
            return
        try:
            self._file.flush()
            if self.fsync:
                os.fsync(self._file.fileno())
        finally:
            self._file.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_trace(path: str | Path, runs: Iterable[Iterable[ev.Event]], *,
                checkpoint_every: int = fmt.CHECKPOINT_EVERY, header: dict[str, Any] | None = None) -> WriteSummary:
    """Write ``runs`` (each an iterable of one run's events) as a new trace file at ``path``.

    The file is written beside ``path`` under a temporary name and renamed into place at
    the end, so ``path`` never holds half a conversion; an existing file is replaced."""
    path = Path(path)
    summary = WriteSummary(str(path))
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    os.close(handle)
    try:
        os.unlink(temporary)  # the writer creates it, with its header
        with TraceWriter(temporary, checkpoint_every=checkpoint_every, flush=False, header=header) as writer:
            for run in runs:
                writer.write_all(run)
        summary.runs = writer.runs_written
        summary.steps = writer.steps_written
        summary.events = writer.events_written
        summary.checkpoints = writer.checkpoints_written
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return summary
