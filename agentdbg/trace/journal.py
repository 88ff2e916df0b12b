"""The operation journal of a trace file: what its earlier runs' keyed calls returned.

A run appended to a trace (``agentdbg record --append``, ``agentdbg.record(mode="append")``,
``agentdbg fork --append``) starts from this journal, so a call whose operation key an
earlier run already used returns that run's result instead of running again. Only the
lines that may hold a key are decoded: ``run_start`` lines, and lines holding the bytes
``"key"`` (or an escape that may spell it), found by searching the file's bytes (a few
milliseconds a hundred megabytes), never by reading it line by line. A line whose bytes
show it is another kind of event (its ``type`` comes first and only once, no escapes) is
not decoded either.

The lines are read as the trace's readers read them (a stray CR dropped, invalid UTF-8
read with replacement characters), so every keyed event they see is in the journal. A
line that holds a key but is damaged (not JSON, not a valid event, too long to decode)
still counts: each key read from it has an unknown effect, and a key cut short there
marks every key that begins that way (the readers report the line itself).
"""

from __future__ import annotations

import json
import mmap
import re
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.journal import OperationJournal
from agentdbg.trace.format import line_prefix
from agentdbg.trace.source import MAX_LINE_BYTES

RUN_START = line_prefix("run_start")
KEY_NAME = b'"key"'
# "key" with a letter written as an escape (k, e, y): such a line may hold a key too.
ESCAPE = b"\\u00"
ESCAPED_LETTERS = (b"\\u006b", b"\\u006B", b"\\u0065", b"\\u0079")
KEYED_TYPES = ("operation", "observation", "approval")
OTHER_PREFIXES = tuple(line_prefix(kind) for kind in ev.EVENT_TYPES if kind not in (*KEYED_TYPES, "run_start"))
TYPE_NAME = b'"type"'
# Where a key's value begins on a damaged line.
KEY_VALUE = re.compile(r'"key"[ \t\r\n]*:[ \t\r\n]*"')
# No event line holds more keys than this: a damaged line that does says nothing of any one of them.
MAX_KEYS_ON_A_LINE = 1000
PARTIAL_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{0,3})?$")


def read_journal(path: str | Path) -> OperationJournal:
    """The journal of the trace at ``path``, ready for the next run's events."""
    journal = OperationJournal()
    with open(path, "rb") as file:
        try:
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped: nothing in it
            return journal
        with data:
            lines = _LineNumbers(data)
            for start in _line_starts(data):
                end = data.find(b"\n", start)
                line = data[start:end if end != -1 else len(data)]
                if not line.startswith(RUN_START) and _another_event(line):
                    continue  # the key was an argument's, or words inside another event's data
                _note_line(journal, line, lambda start=start: lines.number(start))
    return journal


def _another_event(line: bytes) -> bool:
    """The line can only be an event of a kind that holds no key (or no key at all)."""
    if KEY_NAME not in line and not any(escape in line for escape in ESCAPED_LETTERS):
        return True
    # "type" first, once, and nothing escaped: the type it starts with is the one it has.
    return line.startswith(OTHER_PREFIXES) and b"\\u" not in line and line.count(TYPE_NAME) == 1


def _note_line(journal: OperationJournal, line: bytes, number: Any) -> None:
    """Decode ``line`` as the readers do and note it; a damaged one is noted by its keys."""
    if line.endswith(b"\r"):
        line = line[:-1]
    text = line.decode("utf-8", "replace")
    if len(line) > MAX_LINE_BYTES:  # the readers do not decode it: no event, but its keys count
        _note_damaged(journal, text, number())
        return
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        _note_damaged(journal, text, number())
        return
    try:
        event = ev.event_from_dict(data)
    except ValueError:
        if isinstance(data, dict) and data.get("type") in KEYED_TYPES and isinstance(data.get("key"), str):
            if data["key"]:
                journal.note_damaged(data["key"], _damaged(number()))
            return
        _note_damaged(journal, text, number())
        return
    if isinstance(event, (ev.RunStart, ev.Operation, ev.Observation, ev.Approval)):
        journal.note(event)


def _note_damaged(journal: OperationJournal, text: str, number: int) -> None:
    """Every key that can be read from a line that is not an event."""
    if text.count('"key"') > MAX_KEYS_ON_A_LINE:
        journal.note_prefix("", f"line {number:,} of the trace is damaged and holds more than "
                                f"{MAX_KEYS_ON_A_LINE:,} keys: it may name any operation")
        return
    seen: set[str] = set()
    for match in KEY_VALUE.finditer(text):
        written, closed = _string_from(text, match.end())
        if written in seen:
            continue
        seen.add(written)
        if not closed:
            written = PARTIAL_ESCAPE.sub("", written)
        try:
            key = json.loads(f'"{written}"')
        except ValueError:  # an escape that is not JSON: nothing to read
            continue
        if ":" not in key:
            continue  # every operation key is "tool:...": this is no key, or too little of one to say whose
        if closed:
            journal.note_damaged(key, _damaged(number))
        else:
            journal.note_prefix(key, f"{_damaged(number)}, cut inside a key that begins "
                                     f"{json.dumps(key[:80])}: it may be this one")


def _string_from(text: str, start: int) -> tuple[str, bool]:
    """A JSON string's text from ``start`` (after its opening quote) to its closing quote,
    and whether it has one (it may be cut off by the end of the line)."""
    at = start
    while True:
        quote = text.find('"', at)
        if quote == -1:
            return text[start:], False
        escapes = quote
        while escapes > start and text[escapes - 1] == "\\":
            escapes -= 1
        if (quote - escapes) % 2 == 0:  # not escaped: the string ends here
            return text[start:quote], True
        at = quote + 1


def _damaged(number: int) -> str:
    return f"line {number:,} of the trace is damaged and names this operation"


class _LineNumbers:
    """Line numbers of offsets asked for in increasing order, counted as far as needed."""

    def __init__(self, data: mmap.mmap):
        self.data = data
        self.offset = 0
        self.line = 1

    def number(self, offset: int) -> int:
        if offset > self.offset:
            self.line += self.data[self.offset:offset].count(b"\n")
            self.offset = offset
        return self.line


def _line_starts(data: mmap.mmap) -> list[int]:
    """Where the lines that may be run starts or hold a key begin, in file order. Each
    search goes on after the end of the line it found: a line holding a needle many times
    costs no more than one holding it once."""
    starts: set[int] = set()
    for needle in (RUN_START, KEY_NAME, ESCAPE):
        at = data.find(needle)
        while at != -1:
            if needle is ESCAPE and data[at:at + len(ESCAPE) + 2] not in ESCAPED_LETTERS:
                at = data.find(needle, at + 1)  # another escaped character
                continue
            starts.add(data.rfind(b"\n", 0, at) + 1)
            end = data.find(b"\n", at)
            if end == -1:
                break
            at = data.find(needle, end)
    return sorted(starts)
