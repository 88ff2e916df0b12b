"""The operation journal of a trace file: what its earlier runs' keyed calls returned.

A run appended to a trace (``agentdbg record --append``, ``agentdbg.record(mode="append")``)
starts from this journal, so a call whose operation key an earlier run already used
returns that run's result instead of running again. Only the lines that matter are
decoded: ``run_start`` lines, and ``operation`` and ``observation`` lines that hold a key,
found by searching the file's bytes for what they contain (a few milliseconds a hundred
megabytes), never by reading it line by line. A damaged line is skipped here (the
trace's readers report it).
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path

from agentdbg.engine import events as ev
from agentdbg.engine.journal import OperationJournal
from agentdbg.trace.format import line_prefix

RUN_START = line_prefix("run_start")
KEYED = (line_prefix("operation"), line_prefix("observation"))
KEY_FIELD = b'"key":"'


def read_journal(path: str | Path) -> OperationJournal:
    """The journal of the trace at ``path``, ready for the next run's events."""
    journal = OperationJournal()
    with open(path, "rb") as file:
        try:
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped: nothing in it
            return journal
        with data:
            for start in _line_starts(data):
                end = data.find(b"\n", start)
                line = data[start:end if end != -1 else len(data)]
                if not (line.startswith(RUN_START) or (line.startswith(KEYED) and KEY_FIELD in line)):
                    continue  # the words were inside another event's text or data
                try:
                    event = ev.event_from_dict(json.loads(line))
                except (ValueError, RecursionError):  # a damaged line: the readers report it
                    continue
                journal.note(event)
    return journal


def _line_starts(data: mmap.mmap) -> list[int]:
    """Where the lines that may be run starts or hold a key begin, in file order."""
    starts: set[int] = set()
    for needle in (RUN_START, KEY_FIELD):
        at = data.find(needle)
        while at != -1:
            starts.add(data.rfind(b"\n", 0, at) + 1)
            at = data.find(needle, at + len(needle))
    return sorted(starts)
