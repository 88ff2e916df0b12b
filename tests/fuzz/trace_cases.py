"""Mutations of recorded traces: every field of every event type, by type, and whole events
dropped, duplicated, moved, retyped or mangled.

The recorded traces (the sample plans, memory plans included) hold most event types, and
leave out fields still at their default: an event of each type they lack (``raw``, a
debugger's ``pause``) is added, and each event is also mutated with its absent fields
present, so no field of ``docs/events.md`` goes untried.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from agentdbg.engine import events as ev
from fuzz import values
from fuzz.cases import Case, copy_json, drop_at, set_at, shape_text, walk, write_lines

TRACE_NAME = "run.jsonl"
# Dict fields whose keys are data (argument, parameter and tool names): one shape for all keys.
KEYED_BY_DATA = {("action", "args"), ("run_start", "tools", "[]", "params"),
                 ("checkpoint", "state", "tool_calls")}
# Events of the types no recorded trace holds, written into step 1 (a debugger's pause
# happens only live); any other type missing from the recordings gets one made from its fields.
SYNTHETIC_EVENTS = {
    "raw": {"type": "raw", "step": 1, "source": "fuzz", "data": {"k": "v", "n": 1}, "note": "a raw record"},
    "pause": {"type": "pause", "step": 1, "waited": 2.5, "ended": "timeout", "reason": "breakpoint: step 1"},
    # Written by the sample plans' runs too (kv_tax_replan.toml): these stand in if none is recorded.
    "plan": {"type": "plan", "step": 1, "items": ["calc[5 - 3]", "calc[2 * 10]"], "revision": 2},
    "reflection": {"type": "reflection", "step": 1, "text": "the tool name was wrong", "on_step": 1},
}


class Traces:
    """The recorded traces, by name, as lists of lines (bytes, without newlines)."""

    def __init__(self, directory: Path, order: list[str]):
        self.directory = directory
        self.names = [name for name in order if (directory / f"{name}.jsonl").is_file()]
        self._lines: dict[str, list[bytes]] = {}

    def lines(self, name: str) -> list[bytes]:
        if name not in self._lines:
            self._lines[name] = (self.directory / f"{name}.jsonl").read_bytes().splitlines()
        return list(self._lines[name])

    def with_event(self, name: str, event: dict) -> list[bytes]:
        """The trace with ``event`` right after its first step line."""
        lines = self.lines(name)
        first_step = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"step"'))
        lines.insert(first_step + 1, values.dumps(event).encode())
        return lines

    def recorded_types(self) -> set[str]:
        return {json.loads(line).get("type") for name in self.names for line in self.lines(name)}


def _absent_value(annotation: str):
    """A plausible non-default value for a field left out of a recorded event."""
    text = str(annotation).replace(" ", "")
    if text.startswith("str"):
        return "x"
    if text == "bool":
        return True
    if text == "int":
        return 1
    if text == "float":
        return 1.5
    if text.startswith("list"):
        return ["x"]
    if text.startswith("dict"):
        return {"k": "v"}
    return {"k": "v"}  # Any


def with_absent_fields(event: dict) -> dict:
    """``event`` with every field its type defines present (absent ones given a value)."""
    cls = ev.EVENT_TYPES.get(event.get("type"))
    full = dict(event)
    if cls is None:
        return full
    for spec in fields(cls):
        if spec.name not in full:
            full[spec.name] = _absent_value(spec.type)
    if cls is ev.Checkpoint and isinstance(full.get("state"), dict) and not full["state"].get("trips"):
        full["state"] = {**full["state"], "trips": [[1, "max_steps", "step budget exhausted"]]}
    return full


def _shape_key(event_type: str, shape: tuple) -> tuple:
    for keyed in KEYED_BY_DATA:
        if event_type == keyed[0] and shape[: len(keyed) - 1] == keyed[1:] and len(shape) >= len(keyed):
            return shape[: len(keyed) - 1] + ("*",) + shape[len(keyed):]
    return shape


def synthetic_events(traces: Traces) -> list[dict]:
    """An event of each type the recorded traces do not hold."""
    recorded = traces.recorded_types()
    return [SYNTHETIC_EVENTS.get(kind) or with_absent_fields({"type": kind, "step": 1})
            for kind in ev.EVENT_TYPES if kind not in recorded]


def _occurrences(traces: Traces):
    """(trace name, lines, line index, event) for every event of every trace, and for an
    event of each type they do not hold, written into the first trace."""
    for name in traces.names:
        for index, line in enumerate(traces.lines(name)):
            yield name, None, index, json.loads(line)
    name = traces.names[0]
    for event in synthetic_events(traces):
        lines = traces.with_event(name, event)
        yield name, lines, lines.index(values.dumps(event).encode()), event


def field_cases(traces: Traces) -> list[Case]:
    """Each field shape of each event type (first occurrence), replaced by each hostile
    value of its type, and dropped."""
    cases: list[Case] = []
    seen: set = set()
    for name, lines, index, event in _occurrences(traces):
        event_type = event["type"]
        full = with_absent_fields(event)
        for path, shape, value in walk(full):
            if path == ("type",):
                continue  # the type itself: see event_cases
            key = (event_type, _shape_key(event_type, shape), values.json_type(value))
            if key in seen:
                continue
            seen.add(key)
            where = f"trace-field/{event_type}.{shape_text(key[1])}({key[2]})"
            mutations = {**values.replacements(value), "dropped": values.DROP}
            for mutation, new in mutations.items():
                make = _mutated_line(traces, name, lines, index, full, path, new)
                kind = "dropped" if new is values.DROP else f"{key[2]}={mutation}"
                cases.append(Case(f"{where}={mutation}", "trace-field", kind, TRACE_NAME, make,
                                  slow=mutation in values.BIG))
    return cases


def _mutated_line(traces: Traces, name: str, lines, index: int, event: dict, path: tuple, new):
    def make(directory: Path) -> None:
        mutated = copy_json(event)
        if new is values.DROP:
            drop_at(mutated, path)
        else:
            set_at(mutated, path, new)
        _replace_line(traces, name, lines, index, [values.dumps(mutated).encode()])(directory)
    return make


def _replace_line(traces: Traces, name: str, lines, index: int, new: list[bytes]):
    def make(directory: Path) -> None:
        source = list(lines) if lines is not None else traces.lines(name)
        source[index:index + 1] = new
        write_lines(TRACE_NAME, source)(directory)
    return make


def _move_line(traces: Traces, name: str, lines, index: int, to: str):
    def make(directory: Path) -> None:
        source = list(lines) if lines is not None else traces.lines(name)
        line = source.pop(index)
        source.insert(1 if to == "first" else len(source), line)
        write_lines(TRACE_NAME, source)(directory)
    return make


def event_cases(traces: Traces) -> list[Case]:
    """Whole-event mutations, on the first occurrence of each event type (the header too)."""
    cases: list[Case] = []
    seen: set = set()
    for name, lines, index, event in _occurrences(traces):
        event_type = event["type"]
        if event_type in seen:
            continue
        seen.add(event_type)
        original = values.dumps(event)
        without_type = {k: v for k, v in event.items() if k != "type"}
        variants: dict[str, list[bytes]] = {
            "dropped": [],
            "duplicated": [original.encode()] * 2,
            "duplicated-1000": [original.encode()] * 1000,
            "type-missing": [values.dumps(without_type).encode()],
            "type-unknown": [values.dumps({"type": "future_event", **without_type}).encode()],
            "type-number": [values.dumps({"type": 7, **without_type}).encode()],
            "type-empty": [values.dumps({"type": "", **without_type}).encode()],
            "type-osc": [values.dumps({"type": values.OSC, **without_type}).encode()],
            "type-last": [values.dumps({**without_type, "type": event_type}).encode()],
            "spaced": [values.dumps(event, compact=False).encode()],
            "indented": json.dumps(event, indent=2).encode().splitlines(),
            "duplicate-key-step": [original[:-1].encode() + b',"step":999}'],
            "duplicate-key-type": [original[:-1].encode() + b',"type":"run_end"}'],
            "extra-field": [values.dumps({**event, "zzz_extra": values.OSC}).encode()],
        }
        for literal in ("[]", "null", '"text"', "1", "{}", "true"):
            variants[f"replaced-by-{literal.strip(chr(34))}"] = [literal.encode()]
        for how, new in variants.items():
            cases.append(Case(f"trace-event/{event_type}={how}", "trace-event", how, TRACE_NAME,
                              _replace_line(traces, name, lines, index, new)))
        for to in ("first", "last"):
            if (to == "first" and index > 1) or (to == "last" and 0 < index < len(lines or traces.lines(name)) - 1):
                cases.append(Case(f"trace-event/{event_type}=moved-{to}", "trace-event", f"moved-{to}",
                                  TRACE_NAME, _move_line(traces, name, lines, index, to)))
    return cases
