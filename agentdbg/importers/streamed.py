"""A saved run converted a run at a time: for ``convert`` and for files too big to hold.

A format that streams has ``convert_stream(reader, result)`` beside ``convert``: given a
``StreamReader`` on the file, it returns an iterator of (one run's events, how many
records it kept raw), or None when this file's shape is read whole (a single trajectory,
say). It reports problems on ``reader.src`` and may set ``result.empty_run`` and
``result.unread`` once it is done, as ``convert`` sets them. ``StreamedImport`` wraps that
iterator with what ``importers.convert_file`` does around ``convert``: the same counts,
the same errors, the same refusal of a file that gave no step.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from agentdbg.engine import events as ev
from agentdbg.files import read_head
from agentdbg.importers.base import ImportResult, NotImportable, decode, run_holds
from agentdbg.importers.found import nothing_read
from agentdbg.importers.streaming import StreamReader
from agentdbg.model.runs import Document, Problem

_DESCRIBE_BYTES = 16 * 1024 * 1024  # what a refusal describes of a big file that gave no step


class StreamedImport:
    """The runs of one file, converted as they are asked for (``runs`` once). The counts
    and ``problems`` are complete when the iteration ends."""

    def __init__(self, module: ModuleType, reader: StreamReader, path: str):
        self.name = module.NAME
        self.path = path
        self._reader = reader
        self._result = ImportResult(problems=reader.src.problems)
        self._runs = module.convert_stream(reader, self._result)
        self.run_count = 0
        self.step_count = 0
        self.raw_count = 0  # what the format counted as kept raw
        self.raw_events = 0  # raw events written, those before a run's first step included

    @property
    def streams(self) -> bool:
        """False when the format reads this file whole (the caller then reads it so)."""
        return self._runs is not None

    @property
    def problems(self) -> list[Problem]:
        return self._reader.problems

    def close(self) -> None:
        self._reader.close()

    def runs(self) -> Iterator[list[ev.Event]]:
        """Each run's events; NotImportable as ``importers.convert_file`` raises it (the
        runs already given then stand for nothing: a caller writes them where it can undo
        them)."""
        holds = False
        try:
            for events, raw in self._runs:
                self.run_count += 1
                self.raw_count += raw
                self.step_count += sum(isinstance(e, ev.StepStart) for e in events)
                self.raw_events += sum(isinstance(e, ev.RawRecord) for e in events)
                holds = holds or run_holds(events)
                yield events
        except NotImportable as exc:
            raise NotImportable(f"{exc} (reading it as {self.name})") from None
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise NotImportable(f"{self.path}: cannot be read as {self.name}: {type(exc).__name__}: {exc}") from None
        finally:
            self.close()
        if self._result.empty_run is not None:
            holds = self._result.empty_run
        if self.step_count == 0 and not holds:
            text = self._head_text()
            if text.strip():
                raise NotImportable(nothing_read(self.path, self.name, self._result.unread, text, self.run_count))

    def _head_text(self) -> str:
        data = read_head(self.path, _DESCRIBE_BYTES, what="a saved run")
        return decode(data, self.path)[0]


def spool(streamed: StreamedImport) -> Document:
    """The runs of ``streamed`` written to a temporary agentdbg trace and opened from there
    (read by offset: one step in memory at a time). The file is unlinked once open, so
    nothing is left behind; it lives in the system's temporary folder ($TMPDIR) while open."""
    from agentdbg.trace.reader import open_trace
    from agentdbg.trace.writer import write_trace

    folder = tempfile.mkdtemp(prefix="agentdbg-import-")
    trace = Path(folder) / "runs.jsonl"
    try:
        try:
            write_trace(trace, streamed.runs(), header={"source": streamed.path, "source_format": streamed.name})
        except OSError as exc:
            raise NotImportable(f"{streamed.path}: cannot convert it to a temporary trace in {folder}: "
                                f"{exc.strerror or exc}") from None
        document = open_trace(trace)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # an open file stays readable once unlinked
    document.path, document.kind = streamed.path, streamed.name
    document.problems[:0] = streamed.problems
    return document
