"""Byte-level tests on one step's lines as an agentdbg trace holds them.

A continue or a search over a large trace file reads every step; decoding each one's JSON
costs far more than the breakpoint checks. These tests look at the raw bytes instead and
answer only "this step certainly does not match" (False) or "it may" (True): a step they
cannot rule out is decoded and checked properly, so they never change a result, only
its speed. They rely on what the trace writer guarantees (compact JSON, "type" first, one
event per line) and treat anything else as "may match".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from agentdbg.trace.format import line_prefix

# Events that never stop a continue by themselves; observations and guard counters are
# looked into (an error observation, a repeat counter of 2 or more).
QUIET_LINES = tuple(line_prefix(kind) for kind in (
    "step", "thought", "action", "observation", "guards", "memory_recall", "memory_update", "checkpoint",
    "operation"))
_OBSERVATION, _GUARDS = line_prefix("observation"), line_prefix("guards")
_NO_REPEAT = (b"0,", b"1,", b"0]", b"1]")  # the repeat counter's first digits: below 2
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_]+")

BytesTest = Callable[[int, bytes], bool]  # (step, data) -> may match


def is_quiet(data: bytes) -> bool:
    """True when the step certainly has no error, parse error, repeated action, guard
    trip, answer, run end or unmapped record: no automatic break can stop there."""
    for line in data.split(b"\n"):
        if not line or line == b"\r":
            continue
        # A second "type" key could turn a quiet-looking line into another event.
        if not line.startswith(QUIET_LINES) or line.find(b'"type"', 9) != -1:
            return False
        if line.startswith(_OBSERVATION) and b'"error"' in line:
            return False
        if line.startswith(_GUARDS):
            at = line.find(b'"repeats":[')
            if at != -1 and line[at + 11:at + 13] not in _NO_REPEAT:
                return False
    return True


def may_be_eventful(step: int, data: bytes) -> bool:
    return not is_quiet(data)


def name_spellings(name: str) -> tuple[bytes, ...]:
    """The ways a name can be spelled inside a JSON line."""
    plain = json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ascii_only = json.dumps(name).encode("ascii")
    return tuple({plain, ascii_only, plain.replace(b"/", b"\\/"), ascii_only.replace(b"/", b"\\/")})


def may_name(names: list[str], or_shown: bool = False) -> BytesTest:
    """May the step mention one of these names (e.g. call one of these tools)? With
    ``or_shown``, also a tool whose name is not shown as it is written (a control sequence
    or an invisible character in it: it may match a name as shown)."""
    spellings = tuple(s for name in names for s in name_spellings(name))
    if or_shown:
        return lambda step, data: any(s in data for s in spellings) or _names_an_odd_tool(data)
    return lambda step, data: any(s in data for s in spellings)


def _names_an_odd_tool(data: bytes) -> bool:
    """Does a "tool" field in these lines hold an escape or a non-ASCII character?"""
    at = data.find(b'"tool":"')
    while at != -1:
        end = data.find(b'"', at + 8)
        name = data[at + 8:end] if end != -1 else data[at + 8:]
        if b"\\" in name or not name.isascii():
            return True
        at = data.find(b'"tool":"', at + 8)
    return False


def may_contain_word(pattern: str, case_sensitive: bool) -> Callable[[bytes], bool] | None:
    """For a regex that is one plain ASCII word: may a step's text contain it? None for
    any other regex (it needs the decoded text). JSON escapes only quotes, backslashes and
    control characters, so a word of letters, digits and underscores in a text appears
    byte for byte in the line. A ``\\u`` escape or any non-ASCII byte means "may": Unicode
    case folding (the Kelvin sign matches k) and the ``repr`` of unusual characters in a
    call written without its text (``\\u200b``) could otherwise hide a match."""
    if not _PLAIN_WORD.fullmatch(pattern):
        return None
    word = pattern.encode("ascii")
    if case_sensitive:
        return lambda data: word in data or not data.isascii() or b"\\u" in data
    lowered = word.lower()
    return lambda data: lowered in data.lower() or not data.isascii() or b"\\u" in data
