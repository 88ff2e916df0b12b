"""The operation journal of a trace file: what its earlier runs' keyed calls returned.

A run appended to a trace (``agentdbg record --append``, ``agentdbg.record(mode="append")``)
starts from this journal, so a call whose operation key an earlier run already used
returns that run's result instead of running again. Only the lines that matter are
decoded (``run_start``, ``operation`` and keyed ``observation`` lines, found by how they
begin); a damaged line is skipped here (the trace's readers report it).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentdbg.engine import events as ev
from agentdbg.engine.journal import OperationJournal

_WANTED = (b'{"type":"run_start",', b'{"type":"operation",', b'{"type":"observation",')


def read_journal(path: str | Path, end: int | None = None) -> OperationJournal:
    """The journal of the trace at ``path`` (its first ``end`` bytes: what was there before
    this writer began), ready for the next run's events."""
    journal = OperationJournal()
    read = 0
    with open(path, "rb") as file:
        for line in file:
            read += len(line)
            if end is not None and read > end:
                break
            if not line.startswith(_WANTED):
                continue
            if line.startswith(b'{"type":"observation",') and b'"key":' not in line:
                continue
            try:
                event = ev.event_from_dict(json.loads(line))
            except (ValueError, RecursionError):  # a damaged line: the readers report it
                continue
            journal.note(event)
    return journal
