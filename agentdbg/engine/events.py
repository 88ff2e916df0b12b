"""Typed run events: the single source of truth for a run.

A run is an append-only sequence of these events. The engine emits them, the recorder
writes them one per line, and every view of a run (the debugger's state at step N, the
headless reports) is derived from them. ``docs/events.md`` documents the schema.

Every event has a ``type`` and the ``step`` it belongs to: 0 for the run's header
(``run_start``), 1..N for the policy turns, and the last step for ``run_end``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

SCHEMA_VERSION = 1


def jsonable(value: Any) -> Any:
    """Coerce a value into plain JSON types (tuples become lists, the rest becomes text)."""
    try:
        return _jsonable(value)
    except RecursionError:  # nested deeper than the stack allows (a saved run's data can be)
        return _jsonable_without_recursion(value)


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def _jsonable_without_recursion(value: Any) -> Any:
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (value, where it goes, under which key)
    while pending:
        item, container, key = pending.pop()
        if item is None or isinstance(item, (bool, int, float, str)):
            container[key] = item
        elif isinstance(item, dict):
            out: dict[str, Any] | list[Any] = {str(k): None for k in item}
            container[key] = out
            pending.extend((v, out, str(k)) for k, v in reversed(item.items()))  # in order: the last key wins
        elif isinstance(item, (list, tuple)):
            out = [None] * len(item)
            container[key] = out
            pending.extend((v, out, index) for index, v in enumerate(item))
        else:
            container[key] = repr(item)
    return root[0]


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = ""
    step: int

    def to_dict(self) -> dict[str, Any]:
        # "type" first: readers find step boundaries by the bytes a line starts with.
        # Fields still at their default are left out: lines stay short on million-step traces.
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "step" and _is_default(f, value):
                continue
            out[f.name] = jsonable(value)
        return out


def _is_default(f: Any, value: Any) -> bool:
    if f.default is not MISSING:
        return bool(value == f.default)
    if f.default_factory is not MISSING:
        return bool(value == f.default_factory())
    return False


@dataclass(frozen=True)
class RunStart(Event):
    """Opens a run: the task and everything the debugger needs to show its settings."""

    type: ClassVar[str] = "run_start"
    task: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    guards: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    policy: str = ""
    name: str = ""
    source: str = ""
    task_label: str = "Question"  # the prompt opens with "{task_label}: {task}"
    # A fork of an earlier run (see docs/events.md): {"parent": run number in the file,
    # "step": the step edited, "edited": "thought" | "action" | "observation", "text": the new text}
    fork: dict[str, Any] | None = None
    # The SHA-256 (hex) of the plan file ``source`` names, as it was run: a fork re-runs
    # that plan's code only when the file still has it.
    source_sha256: str = ""


@dataclass(frozen=True)
class StepStart(Event):
    """Opens a policy turn; every event up to the next ``step`` belongs to it."""

    type: ClassVar[str] = "step"


@dataclass(frozen=True)
class Thought(Event):
    type: ClassVar[str] = "thought"
    text: str


@dataclass(frozen=True)
class ActionTaken(Event):
    """The policy asked for a tool. ``args`` is an object, or one positional string;
    ``call`` is the action as written (``calc[5 - 3]``)."""

    type: ClassVar[str] = "action"
    tool: str
    args: dict[str, Any] | str
    call: str = ""
    id: str = ""  # several calls in one step: each answered by the observation with its id
    item: int = 0  # the plan item (1-based) this call carries out; 0: the policy chose it now


@dataclass(frozen=True)
class ParseFailed(Event):
    """The policy's output could not be read as an action or an answer."""

    type: ClassVar[str] = "parse_error"
    message: str
    text: str = ""


@dataclass(frozen=True)
class StepError(Event):
    """Something in the step went wrong; ``kind`` is one of ERROR_KINDS (a parse error
    has its own ``parse_error`` event)."""

    type: ClassVar[str] = "error"
    kind: str
    message: str
    tool: str = ""
    id: str = ""  # the call it is about, in a step of several calls


# The kinds of a step error; the first four are a tool's own failure (the call was made).
TOOL_ERROR_KINDS = ("unknown_tool", "bad_args", "exception", "timeout")
ERROR_KINDS = (*TOOL_ERROR_KINDS, "policy", "memory", "tokens")


@dataclass(frozen=True)
class PlanMade(Event):
    """The policy wrote a whole plan: ``items`` are its calls as written, in order. The
    steps after it carry them out one per step without asking the policy (each ``action``
    names its ``item``) until one fails or the plan is done; the policy is then asked again
    (a new plan is ``revision`` 2, 3...)."""

    type: ClassVar[str] = "plan"
    items: list[str] = field(default_factory=list)  # the calls, as text
    revision: int = 1


@dataclass(frozen=True)
class Reflection(Event):
    """The policy's critique of a failed step (``on_step``), asked for before it tries
    again (Reflexion-style). The critique goes into the transcript the next step sees."""

    type: ClassVar[str] = "reflection"
    text: str
    on_step: int = 0


@dataclass(frozen=True)
class Approval(Event):
    """A human (or whoever stands in for one) decided on a call to a dangerous tool before
    it ran: ``decision`` is one of DECISIONS; ``args`` are the arguments that ran instead
    of the proposed ones (the ``action`` event keeps those) when it was ``edited``; ``key``
    and ``id`` are the proposed call's operation key and call id, when it has them."""

    type: ClassVar[str] = "approval"
    tool: str
    decision: str
    by: str = ""
    reason: str = ""
    args: dict[str, Any] | None = None
    key: str = ""
    id: str = ""


DECISIONS = ("approved", "denied", "edited")


@dataclass(frozen=True)
class Operation(Event):
    """A call with an operation key is about to run (written before the tool runs). Its
    result is the step's observation with the same ``key``; a trace holding the operation
    without that observation was cut off while it ran: its effect is unknown."""

    type: ClassVar[str] = "operation"
    key: str
    tool: str = ""


@dataclass(frozen=True)
class Observation(Event):
    """What the policy sees next. ``key``: the operation key of the call it answers;
    ``replayed``: ``{"step": n}`` (and ``"run": n``, the run's number in the trace, for an
    earlier run) when it is a recorded result given again instead of running the call."""

    type: ClassVar[str] = "observation"
    text: str
    error: bool = False
    id: str = ""
    key: str = ""
    replayed: dict[str, Any] | None = None


@dataclass(frozen=True)
class Answered(Event):
    type: ClassVar[str] = "final_answer"
    answer: str


@dataclass(frozen=True)
class GuardCounters(Event):
    """The guards' live counters at the end of a step: [value, limit] pairs, limit None
    when that guard is off. ``step_tokens`` is what this step cost."""

    type: ClassVar[str] = "guards"
    steps: list[Any] = field(default_factory=lambda: [0, None])
    repeats: list[Any] = field(default_factory=lambda: [0, None])
    errors: list[Any] = field(default_factory=lambda: [0, None])
    tokens: list[Any] = field(default_factory=lambda: [0, None])
    step_tokens: int = 0


@dataclass(frozen=True)
class GuardTripped(Event):
    """A guard stopped the run; ``guard`` is one of GUARD_NAMES."""

    type: ClassVar[str] = "guard_tripped"
    guard: str
    message: str


GUARD_NAMES = ("max_steps", "repetition", "error_budget", "token_budget")


@dataclass(frozen=True)
class MemoryRecall(Event):
    """What semantic recall brought back before the policy was asked (best first)."""

    type: ClassVar[str] = "memory_recall"
    query: str
    results: list[Any] = field(default_factory=list)  # [{"text": str, "score": float}]


@dataclass(frozen=True)
class MemoryUpdate(Event):
    """How the memory tiers changed after a step."""

    type: ClassVar[str] = "memory_update"
    added: list[Any] = field(default_factory=list)  # turns appended to the recent buffer
    evicted: list[Any] = field(default_factory=list)  # turns pushed out of it, oldest first
    summary: str | None = None  # the new rolling summary, when it changed
    stored: list[Any] = field(default_factory=list)  # texts added to semantic memory


@dataclass(frozen=True)
class RunEnd(Event):
    type: ClassVar[str] = "run_end"
    outcome: str
    answer: str | None = None
    steps: int = 0
    guard: str | None = None
    message: str = ""
    # A grader's judgement of the run, where the source recorded one (see docs/events.md):
    # {"correct": bool or null, "score": number or null, "expected": text or null, "grader": text}
    verdict: dict[str, Any] | None = None


@dataclass(frozen=True)
class Checkpoint(Event):
    """Full derived state after ``step``, so a reader can start there instead of at 0."""

    type: ClassVar[str] = "checkpoint"
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RawRecord(Event):
    """A record that could not be mapped (from an importer, or an unknown event type):
    kept, shown, never dropped."""

    type: ClassVar[str] = "raw"
    source: str = ""
    data: Any = None
    note: str = ""


@dataclass(frozen=True)
class Paused(Event):
    """A debugger attached to the recording paused the agent after this step: for
    ``waited`` seconds, until ``ended``: ``resumed`` (the user went on), ``timeout`` (the
    recorder's ``pause_timeout`` passed) or ``detached`` (the debugger went away).
    ``reason`` is why the debugger stopped there."""

    type: ClassVar[str] = "pause"
    waited: float = 0.0
    ended: str = "resumed"
    reason: str = ""


PAUSE_ENDINGS = ("resumed", "timeout", "detached")


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        RunStart,
        StepStart,
        Thought,
        ActionTaken,
        ParseFailed,
        StepError,
        PlanMade,
        Reflection,
        Approval,
        Operation,
        Observation,
        Answered,
        GuardCounters,
        GuardTripped,
        MemoryRecall,
        MemoryUpdate,
        RunEnd,
        Checkpoint,
        RawRecord,
        Paused,
    )
}

_JSON_TYPES = {"int": int, "str": str, "bool": bool, "list": list, "dict": dict}


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    types: tuple[Any, ...]  # allowed JSON types; empty = anything
    nullable: bool
    required: bool


def _spec(cls: type[Event]) -> list[_FieldSpec]:
    specs = []
    for f in fields(cls):
        if f.name == "step":
            continue
        parts = str(f.type).replace(" ", "").split("|")
        # list[dict] is checked as a list (what is inside, by the _NESTED checks)
        types = tuple(_JSON_TYPES[p.split("[")[0]] for p in parts if p.split("[")[0] in _JSON_TYPES)
        required = f.default is MISSING and f.default_factory is MISSING
        specs.append(_FieldSpec(f.name, types, "None" in parts, required))
    return specs


_SPECS = {cls: _spec(cls) for cls in EVENT_TYPES.values()}


def _type_ok(value: Any, spec: _FieldSpec) -> bool:
    if value is None:
        return spec.nullable or not spec.types
    if not spec.types:
        return True
    if isinstance(value, bool):
        return bool in spec.types
    return isinstance(value, spec.types)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_counter(value: list[Any]) -> str | None:
    if len(value) != 2 or not _is_count(value[0]) or not (value[1] is None or _is_count(value[1])):
        return "should be [count, limit or null]"
    return None


def _check_texts(value: list[Any]) -> str | None:
    return None if all(isinstance(item, str) for item in value) else "should be a list of strings"


def _check_results(value: list[Any]) -> str | None:
    for item in value:
        if not (isinstance(item, dict) and isinstance(item.get("text"), str)
                and isinstance(item.get("score"), (int, float)) and not isinstance(item.get("score"), bool)):
            return 'should be a list of {"text": string, "score": number}'
    return None


def _check_tools(value: list[Any]) -> str | None:
    for item in value:
        if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
            return 'should be a list of tool specs with a "name"'
        if not isinstance(item.get("params", {}), dict):
            return "should give each tool's params as an object"
    return None


def _check_verdict(value: dict[str, Any]) -> str | None:
    correct, score, expected = value.get("correct"), value.get("score"), value.get("expected")
    if not (correct is None or isinstance(correct, bool)):
        return '"correct" should be true, false or null'
    if not (score is None or (isinstance(score, (int, float)) and not isinstance(score, bool)
                              and score == score and abs(score) != float("inf"))):
        return '"score" should be a number or null'
    if not (expected is None or isinstance(expected, str)):
        return '"expected" should be text or null'
    if not isinstance(value.get("grader", ""), str):
        return '"grader" should be text'
    return None


def _check_seconds(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        return "should be a number of seconds"
    return None


def _check_pause_ending(value: Any) -> str | None:
    return None if value in PAUSE_ENDINGS else f"should be one of {', '.join(PAUSE_ENDINGS)}"


def _check_count(value: Any) -> str | None:
    return None if _is_count(value) else "should be a whole number"


def _check_revision(value: Any) -> str | None:
    return None if _is_count(value) and value >= 1 else "should be a whole number from 1"


def _check_decision(value: str) -> str | None:
    return None if value in DECISIONS else f"should be one of {', '.join(DECISIONS)}"


FORK_EDITS = ("thought", "action", "observation")


def _check_fork(value: dict[str, Any]) -> str | None:
    for name in ("parent", "step"):
        if not (_is_count(value.get(name)) and value[name] >= 1):
            return f'"{name}" should be a whole number from 1'
    if value.get("edited") not in FORK_EDITS:
        return f'"edited" should be one of {", ".join(FORK_EDITS)}'
    return None if isinstance(value.get("text", ""), str) else '"text" should be text'


def _check_replayed(value: dict[str, Any]) -> str | None:
    for name in ("step", "run"):
        if name in value and not (_is_count(value[name])):
            return f'"{name}" should be a whole number'
    return None if "step" in value else 'should say the "step" recorded'


# Shapes inside fields that the derived state relies on: checked here, so a damaged
# event is refused at the door instead of breaking a view later.
_NESTED: dict[tuple[type[Event], str], Callable[[Any], str | None]] = {
    (GuardCounters, "steps"): _check_counter,
    (GuardCounters, "repeats"): _check_counter,
    (GuardCounters, "errors"): _check_counter,
    (GuardCounters, "tokens"): _check_counter,
    (MemoryUpdate, "added"): _check_texts,
    (MemoryUpdate, "evicted"): _check_texts,
    (MemoryUpdate, "stored"): _check_texts,
    (MemoryRecall, "results"): _check_results,
    (RunStart, "tools"): _check_tools,
    (RunEnd, "verdict"): _check_verdict,
    (Paused, "waited"): _check_seconds,
    (Paused, "ended"): _check_pause_ending,
    (Approval, "decision"): _check_decision,
    (Observation, "replayed"): _check_replayed,
    (RunStart, "fork"): _check_fork,
    (ActionTaken, "item"): _check_count,
    (PlanMade, "items"): _check_texts,
    (PlanMade, "revision"): _check_revision,
    (Reflection, "on_step"): _check_count,
}


def event_from_dict(data: Any) -> Event:
    """Build a typed event from its JSON object; raise ValueError saying what is wrong.

    An object with an unknown ``type`` becomes a RawRecord (newer writers may add types)."""
    if not isinstance(data, dict):
        raise ValueError(f"an event must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ValueError("event has no 'type' string")
    step = data.get("step", 0)
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"{kind} event: 'step' should be a non-negative integer, got {step!r}")
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        return RawRecord(step=step, source="unknown event type", data=data, note=f"type {kind!r}")
    kwargs: dict[str, Any] = {}
    for spec in _SPECS[cls]:
        if spec.name in data:
            value = data[spec.name]
            if not _type_ok(value, spec):
                wanted = " or ".join(t.__name__ for t in spec.types)
                raise ValueError(
                    f"{kind} event: field {spec.name!r} should be {wanted}, got {type(value).__name__}"
                )
            check = _NESTED.get((cls, spec.name))
            problem = check(value) if check is not None and value is not None else None  # null: checked above
            if problem:
                raise ValueError(f"{kind} event: field {spec.name!r} {problem}, got {value!r:.60}")
            kwargs[spec.name] = value
        elif spec.required:
            raise ValueError(f"{kind} event: missing field {spec.name!r}")
    return cls(step=step, **kwargs)
