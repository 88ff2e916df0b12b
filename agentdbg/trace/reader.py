"""Read trace files: indexed in the background, steps read by offset, never loaded whole.

``open_trace(path)`` checks the header, indexes the first few hundred kilobytes at once
(so the first screen is ready immediately) and leaves the rest to a background thread.
The index holds only byte offsets: where each run and each step begins (the lines that
start with ``{"type":"run_start",`` and ``{"type":"step",``) and where the checkpoints
are. A step is read when it is asked for (one ``pread`` of its lines), decoded, and kept
in a bounded cache; the state at step N starts from the nearest checkpoint at or before
N and folds the few steps after it.

Damage never loses the valid part. A line that is not JSON, not UTF-8, far too long, or
not a valid event becomes a ``Problem`` (file, line, what is wrong) and the rest of the
file reads on; a recording cut off mid-line opens with every complete event. Problems are
found as the file is read: the index reports what it sees (a cut-off last line, data
outside any run), decoding a step reports what is wrong inside it. Nothing in a trace is
ever executed: lines are parsed with ``json`` only.

Errors: ``open_trace`` raises ``agentdbg.errors.OpenError`` (a ``ValueError``) when the
path cannot be a trace at all (missing, a directory, empty, binary, no header line);
everything after a readable first line opens as a document, with problems listed.
Threads: a run can be read from any thread while the index grows. ``record(n)`` raises
``IndexError`` for a step the index has not reached yet; ``wait_for(n)`` waits for it.

The reading is split by job: ``source`` (a file's bytes, lines and their decoding),
``index`` (where runs and steps begin), ``run`` (runs read by offset, with their caches)
and ``document`` (opening a trace). This module names all of it, as before.
"""

from __future__ import annotations

from agentdbg.trace.document import (
    _RUN_START_LINE as _RUN_START_LINE,
)
from agentdbg.trace.document import (
    SNIFF_BYTES as SNIFF_BYTES,
)
from agentdbg.trace.document import (
    TraceDocument as TraceDocument,
)
from agentdbg.trace.document import (
    _describe_unreadable as _describe_unreadable,
)
from agentdbg.trace.document import (
    _head_kind as _head_kind,
)
from agentdbg.trace.document import (
    _open_error as _open_error,
)
from agentdbg.trace.document import (
    _read_header as _read_header,
)
from agentdbg.trace.document import (
    looks_like_trace as looks_like_trace,
)
from agentdbg.trace.document import (
    open_trace as open_trace,
)
from agentdbg.trace.document import (
    sniff as sniff,
)
from agentdbg.trace.index import (
    _CHECKPOINT as _CHECKPOINT,
)
from agentdbg.trace.index import (
    _KIND_AT as _KIND_AT,
)
from agentdbg.trace.index import (
    _OTHER_STRUCTURE as _OTHER_STRUCTURE,
)
from agentdbg.trace.index import (
    _OVERLAP as _OVERLAP,
)
from agentdbg.trace.index import (
    _RUN_START as _RUN_START,
)
from agentdbg.trace.index import (
    _STEP as _STEP,
)
from agentdbg.trace.index import (
    _STEP_LINE_BYTES as _STEP_LINE_BYTES,
)
from agentdbg.trace.index import (
    _STEP_LINES as _STEP_LINES,
)
from agentdbg.trace.index import (
    _STRUCTURE as _STRUCTURE,
)
from agentdbg.trace.index import (
    _STRUCTURE_TYPES as _STRUCTURE_TYPES,
)
from agentdbg.trace.index import (
    CHUNK_BYTES as CHUNK_BYTES,
)
from agentdbg.trace.index import (
    FIRST_CHUNK_BYTES as FIRST_CHUNK_BYTES,
)
from agentdbg.trace.index import (
    NOTIFY_INTERVAL as NOTIFY_INTERVAL,
)
from agentdbg.trace.index import (
    TraceIndex as TraceIndex,
)
from agentdbg.trace.run import (
    FAST_FOLD_AFTER as FAST_FOLD_AFTER,
)
from agentdbg.trace.run import (
    RECORD_CACHE as RECORD_CACHE,
)
from agentdbg.trace.run import (
    RUN_CACHE as RUN_CACHE,
)
from agentdbg.trace.run import (
    STATE_CACHE as STATE_CACHE,
)
from agentdbg.trace.run import (
    TraceRun as TraceRun,
)
from agentdbg.trace.run import (
    TraceRuns as TraceRuns,
)
from agentdbg.trace.source import (
    _BOM as _BOM,
)
from agentdbg.trace.source import (
    MAX_LINE_BYTES as MAX_LINE_BYTES,
)
from agentdbg.trace.source import (
    MAX_PROBLEMS as MAX_PROBLEMS,
)
from agentdbg.trace.source import (
    MAX_STEP_EVENTS as MAX_STEP_EVENTS,
)
from agentdbg.trace.source import (
    PREVIEW_CHARS as PREVIEW_CHARS,
)
from agentdbg.trace.source import (
    READ_BLOCK as READ_BLOCK,
)
from agentdbg.trace.source import (
    ProblemLog as ProblemLog,
)
from agentdbg.trace.source import (
    _find_data_end as _find_data_end,
)
from agentdbg.trace.source import (
    _json_kind as _json_kind,
)
from agentdbg.trace.source import (
    _Line as _Line,
)
from agentdbg.trace.source import (
    _size_text as _size_text,
)
from agentdbg.trace.source import (
    _Source as _Source,
)
