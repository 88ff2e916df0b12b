"""The trace file format: constants shared by the writer and the reader (docs/trace-format.md)."""

from __future__ import annotations

import json
from typing import Any

from agentdbg import __version__
from agentdbg.engine.events import SCHEMA_VERSION, Event

FORMAT_NAME = "agentdbg-trace"
FORMAT_VERSION = SCHEMA_VERSION
HEADER_PREFIX = b'{"type":"header","format":"agentdbg-trace"'
STEP_PREFIX = b'{"type":"step",'
RUN_START_PREFIX = b'{"type":"run_start",'
CHECKPOINT_PREFIX = b'{"type":"checkpoint",'
CHECKPOINT_EVERY = 64  # steps between checkpoints: any step's state folds at most 63 steps


def header_line(**extra: Any) -> str:
    header = {"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
              "created_by": f"agentdbg {__version__}", **extra}
    return json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n"


def event_line(event: Event) -> str:
    # Compact separators: readers find step boundaries by the exact bytes a line starts with.
    return json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
