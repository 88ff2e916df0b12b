"""The trace file format: constants shared by the writer and the reader (docs/trace-format.md)."""

from __future__ import annotations

import json
from typing import Any

from agentdbg import __version__
from agentdbg.engine.events import SCHEMA_VERSION, Event
from agentdbg.text import escape_json

FORMAT_NAME = "agentdbg-trace"
FORMAT_VERSION = SCHEMA_VERSION


def line_prefix(kind: str) -> bytes:
    """The bytes every trace line of event ``kind`` starts with (the writer's compact JSON
    puts ``type`` first): readers tell lines apart by them without decoding."""
    return b'{"type":"' + kind.encode("ascii") + b'",'


HEADER_PREFIX = line_prefix("header") + b'"format":"agentdbg-trace"'
STEP_PREFIX = line_prefix("step")
RUN_START_PREFIX = line_prefix("run_start")
CHECKPOINT_PREFIX = line_prefix("checkpoint")
CHECKPOINT_EVERY = 64  # steps between checkpoints: any step's state folds at most 63 steps


def header_line(**extra: Any) -> str:
    header = {"type": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION,
              "created_by": f"agentdbg {__version__}", **extra}
    return _json_line(header)


def event_line(event: Event) -> str:
    return _json_line(event.to_dict())


def _json_line(data: dict[str, Any]) -> str:
    # Compact separators: readers find step boundaries by the exact bytes a line starts with.
    # What a terminal would obey (C1 controls, bidi overrides) and lone surrogates (which
    # UTF-8 cannot hold) are \u escapes, so printing a trace is harmless.
    return escape_json(json.dumps(data, ensure_ascii=False, separators=(",", ":"))) + "\n"
