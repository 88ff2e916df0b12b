"""A run's counters (``state.Tally``) folded straight from a trace's bytes, for ``stats`` on
a long run without checkpoints.

Decoding every event of a million steps costs tens of seconds; the counters need only a
few fields of a few events per step. A step written the way agentdbg writes it (compact
JSON, keys in their order, no unusual values) is recognised by one regular expression
that also proves every line of it is a valid event, so it cannot hold a raw record; the
fields the counters need are then read from the matched lines. Any other step (a damaged
line, an unknown event, an object argument with nested values, a raw record, a step of
more than ``FAST_STEP_BYTES``) is decoded the ordinary way. Both ways give the same
counters; the problems reported differ only in that a step read fast is not checked for
what the counters do not depend on (its event step numbers, invalid UTF-8 in its texts).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from agentdbg.model.state import StepRecord, Tally

# A step larger than this is decoded the ordinary way. Small enough that such a step has
# far fewer lines than the reader's cap on events per step (a line is at least 26 bytes).
FAST_STEP_BYTES = 64 * 1024
READ_BYTES = 1024 * 1024  # steps are read this much at a time

_INT = rb"(?:0|[1-9][0-9]*)"
_SIGNED = rb"-?(?:0|[1-9][0-9]*)"
_NUMBER = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_STR = rb'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
_SCALAR = rb"(?:" + _STR + rb"|" + _NUMBER + rb"|true|false|null)"
_FLAT_OBJECT = rb"\{(?:" + _STR + rb":" + _SCALAR + rb"(?:," + _STR + rb":" + _SCALAR + rb")*)?\}"
_COUNTER = rb"\[" + _INT + rb",(?:" + _INT + rb"|null)\]"
_TEXTS = rb"\[(?:" + _STR + rb"(?:," + _STR + rb")*)?\]"
_RESULT = rb'\{"text":' + _STR + rb',"score":' + _NUMBER + rb"\}"


def _optional(key: bytes, value: bytes) -> bytes:
    return rb'(?:,"' + key + rb'":' + value + rb")?"


# The events after "{"type":" (each then has its step number and its fields in order).
_KINDS = [
    rb'thought","step":' + _INT + rb',"text":' + _STR,
    rb'action","step":' + _INT + rb',"tool":(?P<tool>' + _STR + rb'),"args":(?:' + _STR + rb"|" + _FLAT_OBJECT
    + rb")" + _optional(b"call", _STR) + _optional(b"id", _STR),
    rb'(?P<parse>parse_error)","step":' + _INT + rb',"message":' + _STR + _optional(b"text", _STR),
    rb'(?P<error>error)","step":' + _INT + rb',"kind":' + _STR + rb',"message":' + _STR + _optional(b"tool", _STR),
    rb'(?P<observation>observation)","step":' + _INT + rb',"text":' + _STR
    + rb'(?:,"error":(?P<failed>true|false))?' + _optional(b"id", _STR),
    rb'final_answer","step":' + _INT + rb',"answer":(?P<answer>' + _STR + rb")",
    rb'(?P<guards>guards","step":' + _INT + _optional(b"steps", _COUNTER)
    + rb'(?:,"repeats":\[(?P<repeats>' + _INT + rb"),(?:" + _INT + rb"|null)\])?"
    + _optional(b"errors", _COUNTER) + _optional(b"tokens", _COUNTER) + _optional(b"step_tokens", _SIGNED) + rb")",
    rb'guard_tripped","step":' + _INT + rb',"guard":(?P<guard>' + _STR + rb'),"message":(?P<tripped>' + _STR + rb")",
    rb'memory_recall","step":' + _INT + rb',"query":' + _STR
    + _optional(b"results", rb"\[(?:" + _RESULT + rb"(?:," + _RESULT + rb")*)?\]"),
    rb'memory_update","step":' + _INT + _optional(b"added", _TEXTS) + _optional(b"evicted", _TEXTS)
    + _optional(b"summary", rb"(?:" + _STR + rb"|null)") + _optional(b"stored", _TEXTS),
    rb'run_end","step":' + _INT + rb',"outcome":(?P<outcome>' + _STR + rb")"
    + _optional(b"answer", rb"(?:" + _STR + rb"|null)") + _optional(b"steps", _SIGNED)
    + _optional(b"guard", rb"(?:" + _STR + rb"|null)") + _optional(b"message", _STR),
]
# A whole step: its step line, then any of the lines above, or checkpoint lines (never part
# of a step's record, whatever they hold). A named group holds the last line of its kind
# (later events of a kind override earlier ones, as in StepRecord).
_STEP = re.compile(
    rb'\{"type":"step","step":' + _INT + rb"\}\n"
    + rb'(?:\{"type":"(?:(?:' + rb"|".join(_KINDS) + rb')\}\n|checkpoint",[^\n]*\n))*')

_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _value(data: bytes) -> Any:
    """One JSON value the step pattern has already proved valid."""
    return _scan(data.decode("utf-8", "replace"), 0)[0]


def fold_steps(tally: Tally, first: int, offsets: Sequence[int], end: int, pread: Callable[[int, int], bytes],
               record: Callable[[int], StepRecord]) -> Tally:
    """Fold steps ``first``, ``first + 1``, ... into ``tally``: step ``first + i`` is the
    bytes from ``offsets[i]`` to the next offset (``end`` for the last). ``record(n)``
    decodes step n the ordinary way, for a step the pattern does not take."""
    calls = tally.tool_calls
    names: dict[bytes, str] = {}
    pending: bytes | None = None  # the last guards line, applied only when needed: the
    # counters it sets are replaced by the next step's, so only the last one is decoded

    def apply_pending() -> None:
        nonlocal pending
        if pending is not None:
            guards = _value(b'{"type":"' + pending + b"}")
            tally.steps, tally.repeats = guards.get("steps", [0, None]), guards.get("repeats", [0, None])
            tally.errors, tally.tokens = guards.get("errors", [0, None]), guards.get("tokens", [0, None])
            tally.step_tokens = guards.get("step_tokens", 0)
            pending = None

    block, block_start = b"", 0
    for k, start in enumerate(offsets):
        number = first + k
        stop = offsets[k + 1] if k + 1 < len(offsets) else end
        match = None
        if stop - start <= FAST_STEP_BYTES:
            if not (block_start <= start and stop <= block_start + len(block)):
                block, block_start = pread(max(READ_BYTES, stop - start), start), start
            step = block[start - block_start:stop - block_start]
            if len(step) == stop - start:  # (shorter: the file shrank; the ordinary way reports it)
                if not step.endswith(b"\n"):
                    step += b"\n"  # a last line without its newline is read all the same
                match = _STEP.fullmatch(step)
        if match is None:
            apply_pending()
            tally.add(record(number))
            continue
        tool = match.group("tool")
        observation = match.start("observation")
        failed = observation >= 0 and match.start("failed") > observation and match.group("failed") == b"true"
        step_error = match.start("error") >= 0
        parse_error = match.start("parse") >= 0
        if tool is not None:
            name = names.get(tool)
            if name is None:
                name = names[tool] = _value(tool)
            made, bad = calls.get(name, (0, 0))
            calls[name] = [made + 1, bad + (1 if step_error or failed else 0)]
        if step_error or parse_error or failed:
            tally.error_count += 1
        if parse_error:
            tally.parse_errors += 1
        answer = match.group("answer")
        guards_at = match.start("guards")
        if guards_at >= 0:
            pending = match.group("guards")
            repeats = match.group("repeats") if match.start("repeats") > guards_at else None
            if answer is None and repeats is not None and repeats not in (b"0", b"1"):
                tally.repeat_count += 1
        else:
            apply_pending()
            tally.steps, tally.repeats, tally.step_tokens = [number, tally.steps[1]], [0, tally.repeats[1]], 0
        tally.step = number
        tripped = match.group("tripped")
        if tripped is not None:
            tally.trips.append((number, _value(match.group("guard")), _value(tripped)))
        if answer is not None:
            tally.answer = _value(answer)
        outcome = match.group("outcome")
        if outcome is not None:
            tally.outcome = _value(outcome)
    apply_pending()
    return tally
