"""What every importer shares: its result, its errors, reading the input, tool specs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.errors import OpenError, Problem
from agentdbg.files import read_bounded, size_text
from agentdbg.files import read_head as read_file_head

HEAD_BYTES = 64 * 1024  # what a sniff looks at
# A saved run read whole has a limit, so a huge or endless file cannot exhaust memory
# (the formats that stream read a big file a record at a time instead: importers.streamed).
MAX_IMPORT_BYTES = 512 * 1024 * 1024


class NotImportable(OpenError):
    """The input is not a run any importer can read (the message says which were tried and why)."""


class UnknownFormat(OpenError):
    """``--format`` named a format that does not exist (the message lists the valid names)."""


@dataclass
class ImportResult:
    """What a converter made of a file: runs as event lists, how many records were kept
    as raw events because they could not be mapped, and the problems found on the way."""

    runs: list[list[ev.Event]] = field(default_factory=list)
    raw_count: int = 0
    problems: list[Problem] = field(default_factory=list)
    # Zero steps from a file that is not empty is an error unless the file holds a run
    # that has none: ``empty_run`` says whether it does (None: judged from the runs, see
    # ``holds_a_run``); ``unread`` says what the format looked for and did not find.
    empty_run: bool | None = None
    unread: str = ""

    @property
    def step_count(self) -> int:
        return sum(sum(1 for e in run if isinstance(e, ev.StepStart)) for run in self.runs)

    def holds_a_run(self) -> bool:
        """Whether a result without steps is still what the file holds (an empty
        conversation, a question with no step after it) rather than a misreading: the
        converter's word, else a run with a task or an outcome of the source's own."""
        if self.empty_run is not None:
            return self.empty_run
        return any(run_holds(run) for run in self.runs)


def run_holds(run: list[ev.Event]) -> bool:
    """Whether a run is what its file holds even without a step: it has a task, or an
    outcome of the source's own."""
    start, end = run[0], run[-1]
    if isinstance(start, ev.RunStart) and start.task.strip():
        return True
    return isinstance(end, ev.RunEnd) and end.outcome not in ("empty", "unfinished")


@dataclass
class Source:
    """The text to convert and the name problems are reported against."""

    text: str
    path: str
    problems: list[Problem] = field(default_factory=list)

    def problem(self, message: str, line: int | None = None) -> Problem:
        found = Problem(self.path, line, message)
        self.problems.append(found)
        return found


def decode(data: bytes, path: str) -> tuple[str, list[Problem]]:
    """UTF-8 text (a byte-order mark is dropped); undecodable bytes become U+FFFD and are
    reported with the line they are on, so a damaged file still opens."""
    problems: list[Problem] = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), problems
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.append(Problem(path, line, f"not valid UTF-8 at byte {exc.start}; "
                                            "undecodable bytes are shown as U+FFFD"))
        return data.decode("utf-8", errors="replace"), problems


def read_input(path: str | Path, note: str = "") -> bytes:
    """The whole saved run at ``path`` (a regular file of at most MAX_IMPORT_BYTES);
    NotImportable says why not (``note``: what streams instead, for the refusal)."""
    try:
        return read_bounded(path, MAX_IMPORT_BYTES, "runs saved by other agent stacks are read whole, "
                                                    f"at most {size_text(MAX_IMPORT_BYTES)}{note}")
    except OpenError as exc:
        raise NotImportable(str(exc)) from None


def as_source(source: str | bytes | Path, path: str | None = None) -> Source:
    """A converter's input: a Path is read, bytes are decoded, a str is the text itself."""
    if isinstance(source, Path):
        name = path or str(source)
        text, problems = decode(read_input(source), name)
        return Source(text, name, problems)
    if isinstance(source, bytes):
        name = path or "<bytes>"
        text, problems = decode(source, name)
        return Source(text, name, problems)
    return Source(source, path or "<text>")


def read_head(path: str | Path, size: int = HEAD_BYTES) -> str:
    """The first ``size`` bytes as text (a multi-byte character cut at the end is dropped);
    OpenError for what is not a regular file."""
    data = read_file_head(path, size)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


# --- tool specs -------------------------------------------------------------------------

_SCHEMA_TYPES = {"string": "str", "integer": "int", "number": "number", "boolean": "bool",
                 "object": "object", "array": "array"}


def params_from_schema(schema: Any) -> dict[str, str]:
    """A JSON Schema's properties as agentdbg parameter types (unknown types read as str)."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    params: dict[str, str] = {}
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):  # ["string", "null"]
            kind = next((k for k in kind if k != "null"), None)
        params[str(name)] = _SCHEMA_TYPES.get(kind, "str") if isinstance(kind, str) else "str"
    return params


def tool_spec(name: str, description: str = "", params: dict[str, str] | None = None) -> dict:
    """A tool as ``run_start`` lists it."""
    return {"name": name, "description": description or "", "params": dict(params or {}),
            "dangerous": False}


def preview(text: str, limit: int = 120) -> str:
    """Text on one line, cut at ``limit`` characters: for a raw record's note."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def token_count(value: Any) -> int | None:
    """A usage figure as a source recorded it: a count (an integer of 0 or more, not a
    bool), else None, so a damaged figure never reaches the guards counters."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def text_of(value: Any) -> str:
    """Text for a field that should be text but may be anything: JSON for structures."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
