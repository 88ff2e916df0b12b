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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.model.state import StepRecord, Tally

# A step larger than this is decoded the ordinary way. Small enough that such a step has
# far fewer lines than the reader's cap on events per step (a line is at least 26 bytes).
FAST_STEP_BYTES = 64 * 1024

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

# The tool of a plain step's action (a plain step has at most one), and a guards line.
ACTION_TOOL = re.compile(rb'\n\{"type":"action","step":[0-9]+,"tool":("[^"\\]*(?:\\.[^"\\]*)*")')
GUARDS_LINE = b'\n{"type":"guards",'

_GROUPS = _STEP.groupindex
_OBSERVATION, _FAILED, _GUARDS, _REPEATS = (_GROUPS[name] for name in ("observation", "failed", "guards", "repeats"))
_TRIPPED, _ANSWER, _OUTCOME, _PARSE, _ERROR = (_GROUPS[name] for name in ("tripped", "answer", "outcome", "parse",
                                                                            "error"))

_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _value(data: bytes) -> Any:
    """One JSON value the step pattern has already proved valid."""
    return _scan(data.decode("utf-8", "replace"), 0)[0]


def count_tools(data: bytes, start: int, stop: int) -> dict[bytes, int]:
    """How often each tool (its name as written) is called in ``data[start:stop]``, whole
    lines, in the order first called."""
    counted: dict[bytes, int] = {}
    for tool in ACTION_TOOL.findall(data, start, stop):
        counted[tool] = counted.get(tool, 0) + 1
    return counted


class Folder:
    """Folds steps into a ``Tally`` in order: ``matched`` one step the step pattern took
    (``step_match``), ``decoded`` one by its record, ``plain`` a stretch of plain steps
    (``agentdbg.trace.scan``), ``merge`` what a ``PartFolder`` folded, ``finish`` at the end."""

    def __init__(self, tally: Tally, record: Callable[[int], StepRecord]):
        self.tally = tally
        self.record = record
        self.names: dict[bytes, str] = {}
        # The last guards line, applied only when needed: the counters it sets are
        # replaced by the next step's, so only the last one is decoded.
        self.pending: bytes | None = None

    def apply_pending(self) -> None:
        if self.pending is not None:
            tally = self.tally
            guards = _value(b'{"type":"' + self.pending + b"}")
            tally.steps, tally.repeats = guards.get("steps", [0, None]), guards.get("repeats", [0, None])
            tally.errors, tally.tokens = guards.get("errors", [0, None]), guards.get("tokens", [0, None])
            tally.step_tokens = guards.get("step_tokens", 0)
            self.pending = None

    def _name(self, tool: bytes) -> str:
        name = self.names.get(tool)
        if name is None:
            name = self.names[tool] = _value(tool)
        return name

    def _guards_line(self, line: bytes) -> None:
        """A step's guards line (after '{"type":"'): its counters hold until the next one."""
        self.pending = line

    def _no_guards(self, number: int) -> None:
        """Step ``number`` has no guards line: its step counter is its number, no repeat."""
        tally = self.tally
        self.apply_pending()
        tally.steps, tally.repeats, tally.step_tokens = [number, tally.steps[1]], [0, tally.repeats[1]], 0

    def decoded(self, number: int) -> None:
        self.apply_pending()
        self.tally.add(self.record(number))

    def matched(self, number: int, match: re.Match[bytes]) -> None:
        """Step ``number``, as ``step_match`` took it."""
        tally = self.tally
        calls = tally.tool_calls
        tally.policy_calls += 1  # a plan item's action (with "item") is not in the pattern: this step asked
        tool = match.group("tool")
        observation = match.start("observation")
        failed = observation >= 0 and match.start("failed") > observation and match.group("failed") == b"true"
        step_error = match.start("error") >= 0
        parse_error = match.start("parse") >= 0
        if tool is not None and not (observation < 0 and match.start("tripped") >= 0):  # a guard stopped it
            name = self._name(tool)
            made, bad = calls.get(name, (0, 0))
            calls[name] = [made + 1, bad + (1 if step_error or failed else 0)]
        if step_error or parse_error or failed:
            tally.error_count += 1
        if parse_error:
            tally.parse_errors += 1
        answer = match.group("answer")
        guards_at = match.start("guards")
        if guards_at >= 0:
            self._guards_line(match.group("guards"))
            repeats = match.group("repeats") if match.start("repeats") > guards_at else None
            if answer is None and repeats is not None and repeats not in (b"0", b"1"):
                tally.repeat_count += 1
        else:
            self._no_guards(number)
        tally.step = number
        tripped = match.group("tripped")
        if tripped is not None:
            tally.trips.append((number, _value(match.group("guard")), _value(tripped)))
        if answer is not None:
            tally.answer = _value(answer)
        outcome = match.group("outcome")
        if outcome is not None:
            tally.outcome = _value(outcome)

    def plain(self, last: int, data: bytes, start: int, stop: int, guards_step: Callable[[int], int]) -> None:
        """Plain steps up to ``last``, ``data[start:stop]``: each calls at most one tool and
        changes no other counter but the guard counters (the last guards line's, or a
        step's without one). ``guards_step(at)`` is the step holding offset ``at``."""
        calls = self.tally.tool_calls
        self.tally.policy_calls += last - self.tally.step  # a plain step asked the policy (no plan item)
        for tool, times in count_tools(data, start, stop).items():
            name = self._name(tool)
            made, bad = calls.get(name, (0, 0))
            calls[name] = [made + times, bad]
        at = data.rfind(GUARDS_LINE, start, stop)
        if at >= 0:
            line_end = data.find(b"\n", at + 1, stop)
            line = data[at + 1:line_end if line_end >= 0 else stop]
            self._guards_line(line[len(b'{"type":"'):-1])
            if guards_step(at + 1) < last:
                self._no_guards(last)
        else:
            self._no_guards(last)
        self.tally.step = last

    def merge(self, part: Part) -> None:
        """The steps a ``PartFolder`` folded, after those folded here."""
        tally, added = self.tally, part.tally
        calls = tally.tool_calls
        for name, (made, bad) in added.tool_calls.items():
            was_made, was_bad = calls.get(name, (0, 0))
            calls[name] = [was_made + made, was_bad + bad]
        tally.policy_calls += added.policy_calls
        tally.error_count += added.error_count
        tally.parse_errors += added.parse_errors
        tally.repeat_count += added.repeat_count
        tally.trips.extend(added.trips)
        if added.answer is not None:
            tally.answer = added.answer
        if added.outcome is not None:
            tally.outcome = added.outcome
        for line, number in part.guards:
            if line is not None:
                self._guards_line(line)
            else:
                self._no_guards(number)
        tally.step = added.step

    def finish(self) -> Tally:
        self.apply_pending()
        return self.tally


@dataclass
class Part:
    """What folding some steps adds to the counters before them: ``tally`` holds the sums,
    the trips, the last answer and outcome and the last step; ``guards`` the guards lines
    (line, 0) and steps without one (None, step), in order, to be applied where the run's
    counters are (``Folder.merge``)."""

    tally: Tally
    guards: list[tuple[bytes | None, int]]


def _not_here(number: int) -> StepRecord:
    raise AssertionError(f"step {number} needs decoding: a PartFolder folds only what the pattern takes")


class PartFolder(Folder):
    """A ``Folder`` for steps folded apart from the run's counters (in a worker process,
    a block at a time): it adds from zero and keeps the guard lines in order rather than
    applying them. Only plain stretches and steps ``step_match`` takes go in."""

    def __init__(self, after: int):
        super().__init__(Tally(step=after), _not_here)
        self.guards: list[tuple[bytes | None, int]] = []

    def _guards_line(self, line: bytes) -> None:
        if self.guards and self.guards[-1][0] is not None:
            self.guards[-1] = (line, 0)  # (an unapplied line is replaced by the next)
        else:
            self.guards.append((line, 0))

    def _no_guards(self, number: int) -> None:
        if self.guards and self.guards[-1][0] is None:
            self.guards[-1] = (None, number)  # (the later step's number is what remains)
        else:
            self.guards.append((None, number))

    def part(self) -> Part:
        return Part(self.tally, self.guards)


def step_match(data: bytes, start: int, stop: int) -> re.Match[bytes] | None:
    """The step pattern over ``data[start:stop]`` (a whole step), or None when the step is
    to be decoded: too large, not of the pattern, or with several calls."""
    if stop - start > FAST_STEP_BYTES:
        return None
    if data[stop - 1:stop] == b"\n":
        match = _STEP.fullmatch(data, start, stop)
    else:  # a last line without its newline is read all the same
        match = _STEP.fullmatch(data[start:stop] + b"\n")
    if match is not None and data.count(b'{"type":"action"', start, stop) > 1:
        return None  # several calls in one step: each counted, the ordinary way
    return match


class _Counters:
    __slots__ = ("repeats",)

    def __init__(self, repeats: list[int | None]) -> None:
        self.repeats = repeats


class Sketch:
    """A step as far as the checks and automatic breaks read it (``sketch``): the same
    answers as its ``StepRecord`` for ``parse_error``/``error_kind`` being set, the last
    observation failing, the repeat count, the trip, the answer and the end; the texts of
    errors and observations are left empty (decode the step for those)."""

    __slots__ = ("step", "parse_error", "error_kind", "observation", "observation_error", "guards", "tripped",
                 "answer", "end")
    error = None
    tool = None
    call = ""
    output = ""
    approval = None
    decision = None
    raw = ()

    def __init__(self, step: int, parse_error: str | None, error_kind: str | None, observation: str | None,
                 observation_error: bool, guards: _Counters | None, tripped: ev.GuardTripped | None,
                 answer: str | None, end: ev.RunEnd | None) -> None:
        self.step, self.parse_error, self.error_kind = step, parse_error, error_kind
        self.observation, self.observation_error, self.guards = observation, observation_error, guards
        self.tripped, self.answer, self.end = tripped, answer, end

    is_error = StepRecord.is_error
    error_summary = StepRecord.error_summary
    is_repeat = StepRecord.is_repeat


def sketch(number: int, data: bytes, start: int, stop: int) -> Sketch | None:
    """Step ``number`` (``data[start:stop]``, whole lines) as a ``Sketch``; None when the
    step is not one the pattern takes: decode it instead."""
    if stop <= start or data[stop - 1:stop] != b"\n":
        return None  # (a last line without its newline is decoded the ordinary way)
    match = step_match(data, start, stop)  # (positions into ``data``: the step ends with its newline)
    if match is None:
        return None
    regs = match.regs  # every group's span in one call: a check sketches many steps
    observation, failed_at = regs[_OBSERVATION][0], regs[_FAILED][0]
    failed = observation >= 0 and failed_at > observation and data[failed_at] == 0x74  # "true"
    guards_at = regs[_GUARDS][0]
    guards = None
    if guards_at >= 0:
        repeats_at, repeats_end = regs[_REPEATS]
        guards = _Counters([int(data[repeats_at:repeats_end]) if repeats_at > guards_at else 0, None])
    tripped, answer, outcome = regs[_TRIPPED][0], regs[_ANSWER][0], regs[_OUTCOME][0]
    return Sketch(
        number,
        "" if regs[_PARSE][0] >= 0 else None,
        "" if regs[_ERROR][0] >= 0 else None,
        "" if observation >= 0 else None,
        failed,
        guards,
        None if tripped < 0 else ev.GuardTripped(step=number, guard=_value(match.group("guard")),
                                                 message=_value(match.group("tripped"))),
        None if answer < 0 else _value(match.group("answer")),
        None if outcome < 0 else ev.RunEnd(step=number, outcome=_value(match.group("outcome"))),
    )
