"""Two runs compared step by step: which steps match, and what differs where they part.

Steps are aligned by their action (the tool, its name case-folded, and its arguments with
whitespace collapsed and keys sorted), with ``difflib.SequenceMatcher`` over what is left
once the common start and end are set aside (a fork shares its parent's first steps, a run
and its golden run usually share most). Aligned steps with the same action are *equal*
when what they say matches too (thought, observation, answer, errors, the step-local guard
counters, memory) and *changed* otherwise; the rest is *only in A* or *only in B*.

Big runs stay cheap: each step is reduced to two 8-byte digests as it is read (one for its
action, one for the rest), so the alignment (``agentdbg.alignment``) holds 16 bytes a step,
never the steps themselves; what a step says is read again only for the rows that are
shown. Nothing here knows of a screen: the command line and the debugger's split view both
draw from it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentdbg.alignment import (
    CHANGED,
    EQUAL,
    EXACT_ALIGN_STEPS,
    KINDS,
    ONLY_A,
    ONLY_B,
    Alignment,
    Row,
    Segment,
    Summaries,
    align,
)
from agentdbg.model.outcome import run_outcome
from agentdbg.model.runs import RawSteps
from agentdbg.model.state import RunState, StepRecord
from agentdbg.text import one_line, plural

MAX_DEPTH = 64  # nesting of arguments compared
FIELDS = ("thought", "action", "observation", "error", "answer", "guards", "memory", "approval")
RUN_FIELDS = ("task", "outcome", "answer", "verdict", "step count")  # a difference here makes runs differ
NOTED_FIELDS = ("policy", "tools", "guard settings", "memory settings")  # shown, not counted
_RUN_SUFFIX = re.compile(r"^(?P<path>.+):(?P<run>[0-9]+)$", re.S)


class Cancelled(Exception):
    """The comparison was stopped (the debugger's Esc, or quitting)."""


# -- one step, reduced ---------------------------------------------------------------------


def _normal(value: Any, depth: int = 0) -> Any:
    """A value as compared: strings with whitespace collapsed, mappings with sorted keys.
    Nesting beyond ``MAX_DEPTH`` is compared as one mark (hostile arguments nested a
    thousand deep must not exhaust the stack)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return "(nested deeper)"
    if isinstance(value, dict):
        return {str(key): _normal(value[key], depth + 1) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_normal(item, depth + 1) for item in value]
    return value


def _dump(value: Any) -> str:
    # (mappings are sorted by ``_normal`` already; the fields come in one fixed order)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def action_key(record: StepRecord) -> str:
    """What a step did, as aligned: ``search[foo]`` and ``Search({"query": " foo"})`` are the
    same action (a lone argument stands for itself: formats differ in how they name it)."""
    if record.tool is not None:
        args = _normal(record.args)
        if isinstance(args, dict) and len(args) == 1:
            args = next(iter(args.values()))
        if args is None or args == {} or args == []:  # no arguments, however a format says so
            args = ""
        shown = args if isinstance(args, str) else _dump(args)
        return f"{' '.join(record.tool.split()).casefold()}[{shown}]"
    if record.answer is not None:
        return "(final answer)"
    if record.parse_error is not None:
        return "(parse error)"
    if record.tripped is not None:
        return "(guard tripped)"
    if record.raw:
        return "(raw record)"
    return "(no action)"


def step_fields(record: StepRecord) -> dict[str, Any]:
    """What a step says, field by field, as compared (step numbers, token counts and the
    way a format spells a call left out: they differ whenever anything earlier does)."""
    guards = record.guards
    memory = record.memory
    return {
        "thought": _normal(record.thought),
        "action": action_key(record),
        "observation": None if record.observation is None else [_normal(record.observation), record.observation_error],
        "error": None if record.error_kind is None and record.parse_error is None
        else [record.error_kind, _normal(record.error), _normal(record.parse_error)],
        "answer": None if record.answer is None else _normal(record.answer),
        # Counters that say something of this step alone: tokens count the prompt too, and
        # a prompt is longer whenever anything earlier is.
        "guards": [None if guards is None else guards.repeats[0], None if guards is None else guards.errors[0],
                   None if record.tripped is None else record.tripped.guard],
        "memory": [[_normal(hit.get("text") if isinstance(hit, dict) else hit) for hit in record.recalled],
                   None if memory is None else [_normal(memory.added), _normal(memory.evicted),
                                                _normal(memory.summary), _normal(memory.stored)]],
        "approval": None if record.approval is None else [record.approval.decision, _normal(record.approval.args)],
        # (raw records are left out: what a stack saves beside a step, a system message or
        # its own metadata, says how it was saved, not what the agent did)
    }


def _digest(text: str) -> int:
    # Python's own string hash: 64 bits, fast, and the same for both runs (both are
    # reduced in this process); a collision would take ~2^32 different steps.
    return hash(text)


def shared_start(a: Any, b: Any, cancelled: Callable[[], bool] | None = None) -> int:
    """How many first steps two trace files hold byte for byte alike (a fork and its
    parent, a run and its golden copy): equal without being decoded. 0 for other runs."""
    if not isinstance(a, RawSteps) or not isinstance(b, RawSteps):
        return 0
    for run in (a, b):
        waiter = getattr(run, "wait", None)  # every step indexed (of a file being written: all it holds now)
        if callable(waiter):
            waiter()
    shared = 0
    for step in range(1, min(a.step_count, b.step_count) + 1):
        bytes_a = a.step_bytes(step)
        if bytes_a is None or bytes_a != b.step_bytes(step):
            break
        shared = step
        if step % 20_000 == 0 and cancelled is not None and cancelled():
            raise Cancelled
    return shared


def summarize(run: Any, cancelled: Callable[[], bool] | None = None,
              progress: Callable[[int], None] | None = None, start: int = 1) -> Summaries:
    """Every step of ``run`` from ``start`` read once, in order, reduced. A file still
    being indexed is waited for; of one still being written, the steps it holds now."""
    waiter = getattr(run, "wait", None)
    if callable(waiter):
        waiter()
    summaries = Summaries()
    for step in range(start, run.step_count + 1):
        fields = step_fields(run.record(step))
        summaries.add(_digest(fields["action"]), _digest(_dump(fields)))
        if step % 2000 == 0:
            if cancelled is not None and cancelled():
                raise Cancelled
            if progress is not None:
                progress(step)
    return summaries


# -- what differs ----------------------------------------------------------------------------


def differing_fields(a: StepRecord | None, b: StepRecord | None) -> list[str]:
    """The fields of two aligned steps that differ (all a step has, when one is missing)."""
    if a is None or b is None:
        return []
    fields_a, fields_b = step_fields(a), step_fields(b)
    return [name for name in FIELDS if fields_a[name] != fields_b[name]]


def _outcome(run: Any) -> tuple[str, str | None, dict | None]:
    end = run.end
    return run_outcome(run), None if end is None else end.answer, None if end is None else end.verdict


def run_differences(a: Any, b: Any) -> tuple[list[str], list[str]]:
    """What differs between the runs as a whole: (counted, noted). Counted differences make
    the runs differ (the task, how they ended, their length); noted ones (settings, the
    policy's name, the tool list) are shown but do not, so a run can match its golden run
    even when it was recorded by another stack."""
    info_a, info_b = a.info, b.info
    counted = []
    if _normal(info_a.task) != _normal(info_b.task):
        counted.append("task")
    outcome_a, answer_a, verdict_a = _outcome(a)
    outcome_b, answer_b, verdict_b = _outcome(b)
    if outcome_a != outcome_b:
        counted.append("outcome")
    if _normal(answer_a) != _normal(answer_b):
        counted.append("answer")
    if (verdict_a or {}).get("correct") != (verdict_b or {}).get("correct"):
        counted.append("verdict")
    if a.step_count != b.step_count:
        counted.append("step count")
    noted = []
    if (info_a.policy or "") != (info_b.policy or "") and info_a.policy and info_b.policy:
        noted.append("policy")
    if info_a.tool_names() != info_b.tool_names() and info_a.tools and info_b.tools:
        noted.append("tools")
    # (a format that records no settings differs from none)
    if info_a.guards and info_b.guards and info_a.guards != info_b.guards:
        noted.append("guard settings")
    if info_a.memory and info_b.memory and info_a.memory != info_b.memory:
        noted.append("memory settings")
    return counted, noted


@dataclass
class RunDiff:
    """Two runs compared: the alignment and what differs between the runs as wholes."""

    a: Any
    b: Any
    alignment: Alignment
    run_fields: list[str]
    noted_fields: list[str]

    @property
    def identical(self) -> bool:
        return self.alignment.identical and not self.run_fields

    def records(self, row: Row) -> tuple[StepRecord | None, StepRecord | None]:
        return (None if row.a is None else self.a.record(row.a), None if row.b is None else self.b.record(row.b))

    def state_pair(self, row: Row):
        """Derived state on each side at ``row`` (where one side has a gap: after its step
        before the gap), rebuilt from events as everywhere else."""
        return self.a.state_at(row.a_at), self.b.state_at(row.b_at)


def compare(a: Any, b: Any, cancelled: Callable[[], bool] | None = None,
            progress: Callable[[str, int], None] | None = None) -> RunDiff:
    """Compare two runs (any ``runs.RunView``); reads each step at most once (the steps
    two trace files share byte for byte are compared as bytes, never decoded)."""
    shared = shared_start(a, b, cancelled)
    summaries_a = summarize(a, cancelled, None if progress is None else (lambda step: progress("A", step)), shared + 1)
    summaries_b = summarize(b, cancelled, None if progress is None else (lambda step: progress("B", step)), shared + 1)
    counted, noted = run_differences(a, b)
    return RunDiff(a, b, align(summaries_a, summaries_b, shared), counted, noted)


# -- choosing and describing -------------------------------------------------------------------


def split_run(spec: str) -> tuple[str, int | None]:
    """``FILE:N`` as (FILE, N), N being a run of the file; a path that exists as written is
    taken whole (a file may have a colon in its name)."""
    if os.path.lexists(spec):
        return spec, None
    match = _RUN_SUFFIX.match(spec)
    if match is None:
        return spec, None
    return match.group("path"), int(match.group("run"))


def step_label(record: StepRecord | None, limit: int = 200) -> str:
    """A step in a few words, on one line and safe to show: its call, answer, or what
    went wrong."""
    if record is None:
        return ""
    if record.answer is not None:
        return "answer: " + one_line(record.answer, limit)
    if record.tool is not None:
        return one_line(record.call or record.tool, limit)
    if record.parse_error is not None:
        return "parse error: " + one_line(record.parse_error, limit)
    if record.tripped is not None:
        return "guard: " + one_line(record.tripped.message, limit)
    if record.error is not None:
        return "error: " + one_line(record.error, limit)
    return one_line(record.thought, limit) or "(no action)"


def _pair(pair: Any) -> str:
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        value, limit = pair
        return one_line(f"{value}/{limit}" if limit is not None else f"{value}", 40)
    return one_line(str(pair), 40)


def state_lines(state: RunState) -> dict[str, str]:
    """The derived state compared where runs part: guard counters, what went wrong so far,
    memory tiers (one safe line each)."""
    memory = state.memory
    return {
        "counters": (f"step {_pair(state.steps)} · repeats {_pair(state.repeats)} · "
                     f"errors {_pair(state.errors)} · tokens {_pair(state.tokens)}"),
        "so far": (f"{plural(state.error_count, 'error step')} · {plural(state.repeat_count, 'repeat')} · "
                   f"{plural(len(state.trips), 'guard trip')}"),
        "memory": (f"{plural(len(memory.buffer), 'turn')} buffered · summary "
                   f"{one_line(memory.summary, 60) or '(none)'} · {plural(memory.semantic_size, 'item')} stored"),
    }


def differ_phrase(names: list[str]) -> str:
    """``the task differs`` / ``the outcome and answer differ``."""
    if len(names) == 1:
        return f"the {names[0]} differs"
    return f"the {', '.join(names[:-1])} and {names[-1]} differ"


def memory_change(record: StepRecord, limit: int = 300) -> str:
    """What a step did to memory, in words (the field compared as ``memory``)."""
    parts = []
    if record.recalled:
        texts = [hit.get("text", "") if isinstance(hit, dict) else hit for hit in record.recalled]
        parts.append("recalled " + " | ".join(one_line(str(text), 80) for text in texts[:5])
                     + (f" (+{len(texts) - 5} more)" if len(texts) > 5 else ""))
    update = record.memory
    if update is not None:
        for label, items in (("added", update.added), ("evicted", update.evicted), ("stored", update.stored)):
            if items:
                parts.append(f"{label} " + " | ".join(one_line(str(item), 80) for item in items[:5])
                             + (f" (+{len(items) - 5} more)" if len(items) > 5 else ""))
        if update.summary is not None:
            parts.append("summary " + one_line(str(update.summary), 120))
    return one_line("; ".join(parts), limit)


def counters_text(record: StepRecord) -> str:
    """The step's guard counters as written (what the ``guards`` field is compared from,
    with the cumulative ones beside it)."""
    guards = record.guards
    if guards is None:
        return ""
    return one_line(f"repeats {guards.repeats[0]} · errors {guards.errors[0]} · step {guards.steps[0]} · "
                    f"tokens {guards.tokens[0]} (+{guards.step_tokens})", 200)


def field_text(record: StepRecord, name: str) -> str:
    """What field ``name`` (one of ``FIELDS``) of a step says, for a person: its text as
    recorded, not the compared form (not made safe to show: callers do that)."""
    if name == "thought":
        return record.thought
    if name == "action":
        return record.call or (record.tool or "(none)")
    if name == "observation":
        if record.observation is None:
            return "(none)"
        return ("(error) " if record.observation_error else "") + record.observation
    if name == "error":
        if record.parse_error is not None:
            return f"parse error: {record.parse_error}"
        return f"{record.error_kind}: {record.error}" if record.error_kind is not None else "(none)"
    if name == "answer":
        return "(none)" if record.answer is None else record.answer
    if name == "guards":
        tripped = f"; tripped {record.tripped.guard}: {record.tripped.message}" if record.tripped is not None else ""
        return (counters_text(record) or "(no counters)") + tripped
    if name == "memory":
        return memory_change(record) or "(no memory change)"
    if name == "approval":
        return record.approval_text() or "(none)"
    raise ValueError(f"no field {name!r}")


__all__ = ["CHANGED", "EQUAL", "EXACT_ALIGN_STEPS", "KINDS", "ONLY_A", "ONLY_B", "Alignment", "Cancelled",
           "Row", "RunDiff", "Segment", "Summaries", "align", "compare", "differing_fields", "field_text",
           "split_run", "state_lines", "step_fields", "step_label"]
