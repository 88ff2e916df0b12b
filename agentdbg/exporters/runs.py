"""A run's events as an exporter reads them: one step at a time, never the whole run.

``RunStream(events, number)`` reads the ``run_start`` first (the run's identity: ids are
derived from it), then yields each step as a ``StepRecord`` as soon as its events are in;
after the last step, ``end`` (the ``run_end``), ``preamble`` (records before the first
step) and the token total are known. Facts the target formats have no place for are
gathered here as plain JSON values (``agentdbg_facts``) for the ``agentdbg.*`` fields.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.model.state import StepGrouper, StepRecord

# Where a policy's description names its model (see the importers and the engine's model
# policies): "recorded: gpt-4o", "recorded: gpt-4o (OpenAI Responses)", "recorded:
# SWE-agent (gpt-4o)", "openai: model gpt-4o at http://...".
_MODEL_NAME = r"[\w.:/@+-]+"
_RECORDED = re.compile(rf"recorded: (?P<model>{_MODEL_NAME})(?: \(.*\))?")
_RECORDED_BY = re.compile(rf"recorded: [^()]+ \((?P<model>{_MODEL_NAME})(?: \(.*\))?\)")
_ENGINE = re.compile(rf"(?P<api>[\w.-]+): model (?P<model>{_MODEL_NAME}) at ")
_NOT_MODELS = {"chat", "transcript"}


def model_of(policy: str) -> tuple[str, str]:
    """(provider, model) as far as the run's policy description names them ('' when not)."""
    engine = _ENGINE.match(policy)
    if engine:
        return engine["api"], engine["model"]
    for pattern in (_RECORDED, _RECORDED_BY):
        found = pattern.fullmatch(policy)
        if found and found["model"].lower() not in _NOT_MODELS:
            return "", found["model"]
    return "", ""


def digest(*parts: str, size: int) -> str:
    """``size`` bytes of a SHA-256 over ``parts``, as lowercase hex (never all zeros,
    which OpenTelemetry reads as no id)."""
    value = hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[: 2 * size]
    return value if value.strip("0") else "1".rjust(2 * size, "0")


class RunStream:
    """One run, read as it goes (see the module's notes)."""

    def __init__(self, events: Iterable[ev.Event], number: int):
        self.number = number
        self._events = iter(events)
        self._first: ev.Event | None = None
        for event in self._events:
            if isinstance(event, ev.RunStart):
                self.start = event
            else:
                self._first = event  # a run without a run_start (a damaged trace)
                self.start = ev.RunStart(step=0, task="")
            break
        else:
            self.start = ev.RunStart(step=0, task="")
        self.preamble: list[ev.Event] = []
        self.end: ev.RunEnd | None = None
        self.tokens = 0  # the running total after the last step
        self.step_count = 0
        self.identity = json.dumps(self.start.to_dict(), sort_keys=True, ensure_ascii=True)
        self.trace_id = self.id("trace", size=16)

    def id(self, *parts: str, size: int = 8) -> str:
        """A span id (``size`` 8) or the trace id (16) derived from the run and ``parts``."""
        return digest(self.identity, str(self.number), *parts, size=size)

    def steps(self) -> Iterator[StepRecord]:
        events = self._events if self._first is None else _prepend(self._first, self._events)
        grouper = StepGrouper()
        grouper.preamble = self.preamble  # filled as the events are read
        for event in events:
            record = grouper.add(event)
            self.end = grouper.end
            if record is not None:
                yield self._counted(record)
        last = grouper.open_record()
        if last is not None:
            yield self._counted(last)

    def _counted(self, record: StepRecord) -> StepRecord:
        self.step_count += 1
        if record.guards is not None:
            self.tokens = record.guards.tokens[0] or 0
        return record


def _prepend(first: ev.Event, rest: Iterator[ev.Event]) -> Iterator[ev.Event]:
    yield first
    yield from rest


# --- facts only agentdbg has ---------------------------------------------------------------


def raw_records(events: Iterable[ev.Event]) -> list[dict]:
    return [{"source": e.source, "data": e.data, "note": e.note} for e in events if isinstance(e, ev.RawRecord)]


def step_facts(record: StepRecord) -> dict[str, Any]:
    """What a step holds beyond a model turn and a tool call: guard counters, memory,
    raw records, a guard that tripped. Only what is there (an empty dict for a plain step)."""
    facts: dict[str, Any] = {}
    if record.guards is not None:
        g = record.guards
        facts["guards"] = {"steps": g.steps, "repeats": g.repeats, "errors": g.errors, "tokens": g.tokens,
                           "step_tokens": g.step_tokens}
    memory = [e.to_dict() for e in record.events if isinstance(e, (ev.MemoryRecall, ev.MemoryUpdate))]
    if memory:
        facts["memory"] = memory
    if record.raw:
        facts["raw"] = raw_records(record.raw)
    if record.tripped is not None:
        facts["guard_tripped"] = {"guard": record.tripped.guard, "message": record.tripped.message}
    # Approvals, operation keys and pauses: written for the record, not read back on import.
    held = [e.to_dict() for e in record.events if isinstance(e, (ev.Approval, ev.Operation, ev.Paused))]
    held += [{"type": "observation", "key": e.key, "replayed": e.replayed} for e in record.events
             if isinstance(e, ev.Observation) and (e.key or e.replayed is not None)]
    if held:
        facts["control"] = held
    # Plans, plan items and reflections: written for the record, not read back on import.
    if record.plan is not None:
        facts["plan"] = {"items": record.plan.items, "revision": record.plan.revision}
    if record.item:
        facts["plan_item"] = record.item
    if record.reflection is not None:
        facts["reflection"] = {"text": record.reflection.text, "on_step": record.reflection.on_step}
    return facts


def turn_text(record: StepRecord) -> str:
    """A turn that called nothing and answered nothing, as the model wrote it: its
    reflection, or its thought and its plan ('' when it said none of these)."""
    if record.reflection is not None:
        return f"Reflection: {record.reflection.text}"
    lines = [record.thought] if record.thought else []
    if record.plan is not None:
        lines.append("Plan:")
        lines.extend(f"{i}. {item}" for i, item in enumerate(record.plan.items, 1))
    return "\n".join(lines)


def run_facts(run: RunStream) -> dict[str, Any]:
    """The run's own facts: how it ended, its settings, what stood before its first step."""
    start, end = run.start, run.end
    facts: dict[str, Any] = {"run": run.number, "steps": run.step_count, "tokens": run.tokens,
                             "task": start.task, "name": start.name, "policy": start.policy, "source": start.source, "tools": start.tools,
                             "guards": start.guards}
    if start.task_label != "Question":
        facts["task_label"] = start.task_label
    if start.memory is not None:
        facts["memory"] = start.memory
    if end is not None:
        facts["outcome"] = end.outcome
        for key in ("answer", "guard", "verdict"):
            if getattr(end, key) is not None:
                facts[key] = getattr(end, key)
        if end.message:
            facts["message"] = end.message
    else:
        facts["outcome"] = "unfinished"  # the run has no end (a recording cut off)
    if run.preamble:
        facts["preamble"] = [e.to_dict() for e in run.preamble]
    return facts


def call_id(record: StepRecord) -> str:
    return next((e.id for e in record.events if isinstance(e, ev.ActionTaken)), "")


def observation_id(record: StepRecord) -> str:
    """The call id the reply gave (a reply to a call whose arguments could not be read)."""
    return next((e.id for e in record.events if isinstance(e, ev.Observation)), "")


def written_call(tool: str, arguments: Any) -> str:
    """The call as text the way the importers write it: its name and its arguments."""
    return f"{tool} {arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)}"


def arguments_object(record: StepRecord, tools: list[dict]) -> tuple[dict, bool]:
    """The call's arguments as a JSON object, and whether they were one positional text
    (``calc[5 - 3]``): then it goes under the tool's only parameter, else ``input``."""
    if isinstance(record.args, dict):
        return record.args, False
    text = "" if record.args is None else str(record.args)
    spec = next((t for t in tools if isinstance(t, dict) and t.get("name") == record.tool), None)
    params = spec.get("params") if isinstance(spec, dict) else None
    name = next(iter(params)) if isinstance(params, dict) and len(params) == 1 else "input"
    return {str(name): text}, True


_SCHEMA_TYPES = {"str": "string", "int": "integer", "float": "number", "number": "number",
                 "bool": "boolean", "dict": "object", "object": "object", "list": "array", "array": "array"}


def json_schema(params: Any) -> dict:
    """A tool's agentdbg parameters as the JSON Schema a model API's tool definition holds."""
    properties: dict[str, Any] = {}
    for name, kind in (params.items() if isinstance(params, dict) else ()):
        mapped = _SCHEMA_TYPES.get(str(kind))
        properties[str(name)] = {"type": mapped} if mapped else {}
    return {"type": "object", "properties": properties}
