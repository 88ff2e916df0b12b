"""The debugger's view of a run, derived from events alone.

``StepRecord`` gathers what one step's events say; ``RunState`` is everything the panes
show at step N (guard counters, tool usage, memory tiers), built by folding records:
state(N) = state(N-1).advance(record(N)). It is a pure function of events[:N], so stepping
back is exact, and it serialises to a checkpoint so a reader can start mid-file.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.events import (
    _check_counter,
    _check_results,
    _check_texts,
    _check_verdict,
    _is_count,
)

STATE_VERSION = 1


@dataclass(frozen=True)
class RunInfo:
    """The run's header: what ``run_start`` says."""

    task: str = ""
    tools: tuple[Any, ...] = ()  # tool specs: {"name", "description", "params", "dangerous"}
    guards: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    policy: str = ""
    name: str = ""
    source: str = ""
    task_label: str = "Question"
    fork: dict[str, Any] | None = None  # run_start.fork: this run is a fork of an earlier one
    source_sha256: str = ""  # the plan file's SHA-256 when it was run

    @classmethod
    def from_event(cls, event: ev.RunStart | None) -> RunInfo:
        if event is None:
            return cls()
        return cls(event.task, tuple(event.tools), dict(event.guards), event.memory,
                   event.policy, event.name, event.source, event.task_label, event.fork, event.source_sha256)

    def fork_text(self) -> str:
        """``fork of run 1 at step 3: observation edited`` ('' for a run that is no fork)."""
        fork = self.fork
        if not fork:
            return ""
        call = fork.get("call")
        edited = f"call {call}'s {fork.get('edited')}" if isinstance(call, int) and call > 0 else fork.get("edited")
        return f"fork of run {fork.get('parent')} at step {fork.get('step')}: {edited} edited"

    @property
    def task_line(self) -> str:
        """How the prompt opens: ``Question: ...``."""
        return f"{self.task_label}: {self.task}"

    def tool_names(self) -> set[str]:
        return {spec.get("name", "") for spec in self.tools if isinstance(spec, dict)}


@dataclass(frozen=True)
class CallRecord:
    """One tool call of a step and what answered it (a step may make several)."""

    tool: str
    args: Any = None
    call: str = ""
    id: str = ""
    item: int = 0  # the plan item it carried out, 0 when the policy chose it in this step
    observation: str | None = None
    observation_error: bool = False
    error_kind: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error_kind is not None or self.observation_error


def _gather_calls(events: tuple[Any, ...]) -> tuple[CallRecord, ...]:
    """The calls of a step of several, each with its observation and error: matched by
    ``id``, else given to the first call not yet answered, in order. Linear in the events
    (a damaged step may hold thousands of calls)."""
    calls: list[dict[str, Any]] = []
    waiting: dict[tuple[str, str], deque[int]] = {}  # (field, id) -> calls with that id still without it
    first = {"observation": 0, "error": 0}  # below these, every call has that field
    for event in events:
        if isinstance(event, ev.ActionTaken):
            calls.append({"tool": event.tool, "args": event.args, "call": event.call or _call_text(event),
                          "id": event.id, "item": event.item})
            if event.id:
                for field_name in first:
                    waiting.setdefault((field_name, event.id), deque()).append(len(calls) - 1)
        elif isinstance(event, (ev.Observation, ev.StepError)):
            field_name = "observation" if isinstance(event, ev.Observation) else "error"
            index = None
            queue = waiting.get((field_name, event.id)) if event.id else None
            while queue:
                candidate = queue.popleft()
                if field_name not in calls[candidate]:
                    index = candidate
                    break
            if index is None:
                while first[field_name] < len(calls) and field_name in calls[first[field_name]]:
                    first[field_name] += 1
                if first[field_name] == len(calls):
                    continue
                index = first[field_name]
            target = calls[index]
            if isinstance(event, ev.Observation):
                target.update(observation=event.text, observation_error=event.error)
            else:
                target.update(error=event.message, error_kind=event.kind)
    return tuple(CallRecord(**call) for call in calls)


@dataclass(frozen=True)
class StepRecord:
    """Everything one step's events say, in one place. A step of several calls keeps
    them in ``calls``; ``tool``, ``args`` and ``call`` are then the first one's, and
    ``observation`` their observations in call order, one per line."""

    step: int
    events: tuple[Any, ...] = ()
    thought: str = ""
    tool: str | None = None
    args: Any = None
    call: str = ""
    parse_error: str | None = None
    output: str = ""  # the unparseable output, when there was a parse error
    error_kind: str | None = None
    error: str | None = None
    observation: str | None = None
    observation_error: bool = False
    answer: str | None = None
    guards: ev.GuardCounters | None = None
    tripped: ev.GuardTripped | None = None
    recalled: tuple[Any, ...] = ()  # ({"text", "score"}, ...)
    memory: ev.MemoryUpdate | None = None
    raw: tuple[Any, ...] = ()  # RawRecord events
    end: ev.RunEnd | None = None
    approval: ev.Approval | None = None  # the decision on a dangerous call
    operation: ev.Operation | None = None  # a keyed call started
    key: str = ""  # the operation key of the call the observation answers
    replayed: dict[str, Any] | None = None  # the observation is a recorded result: {"step", "run"?}
    calls: tuple[CallRecord, ...] = ()  # when the step made more than one call
    plan: ev.PlanMade | None = None  # the policy wrote a plan in this step
    item: int = 0  # the plan item this step carried out (1-based): the policy was not asked
    reflection: ev.Reflection | None = None  # the policy's critique of a failed step

    @classmethod
    def from_events(cls, step: int, events: Iterable[ev.Event]) -> StepRecord:
        got: dict[str, Any] = {"events": tuple(events)}
        raw = []
        recalled: list[Any] = []
        thoughts: list[str] = []
        updates: list[ev.MemoryUpdate] = []
        actions = 0
        for event in got["events"]:
            if isinstance(event, ev.Thought):
                # Joined by newlines, the whole stripped (each part added in one pass:
                # a step of many thoughts stays linear).
                text = event.text.rstrip() if thoughts else event.text.strip()
                if text:
                    thoughts.append(text)
            elif isinstance(event, ev.ActionTaken):
                actions += 1
                if actions == 1:
                    got.update(tool=event.tool, args=event.args, call=event.call or _call_text(event), item=event.item)
            elif isinstance(event, ev.PlanMade):
                got["plan"] = event
            elif isinstance(event, ev.Reflection):
                got["reflection"] = event
            elif isinstance(event, ev.ParseFailed):
                got.update(parse_error=event.message, output=event.text)
            elif isinstance(event, ev.StepError):
                got.update(error_kind=event.kind, error=event.message)
            elif isinstance(event, ev.Observation):
                got.update(observation=event.text, observation_error=event.error, replayed=event.replayed)
                if event.key:
                    got["key"] = event.key
            elif isinstance(event, ev.Approval):
                got["approval"] = event
            elif isinstance(event, ev.Operation):
                got.update(operation=event, key=event.key)
            elif isinstance(event, ev.Answered):
                got["answer"] = event.answer
            elif isinstance(event, ev.GuardCounters):
                got["guards"] = event
            elif isinstance(event, ev.GuardTripped):
                got["tripped"] = event
            elif isinstance(event, ev.MemoryRecall):
                recalled.extend(event.results)
            elif isinstance(event, ev.MemoryUpdate):
                updates.append(event)
            elif isinstance(event, ev.RawRecord):
                raw.append(event)
            elif isinstance(event, ev.RunEnd):
                got["end"] = event
        if thoughts:
            got["thought"] = "\n".join(thoughts)
        if actions > 1:
            calls = got["calls"] = _gather_calls(got["events"])
            answered = [c.observation for c in calls if c.observation is not None]
            if answered:
                got["observation"] = "\n".join(answered)
            got["observation_error"] = got.get("observation_error", False) or any(c.observation_error for c in calls)
            failed = next((c for c in calls if c.error_kind is not None), None)
            if failed is not None:
                got.update(error_kind=failed.error_kind, error=failed.error)
        if updates:
            got["memory"] = updates[0] if len(updates) == 1 else _merge_updates(updates)
        return cls(step=step, recalled=tuple(recalled), raw=tuple(raw), **got)

    @property
    def called_tool(self) -> str | None:
        """The tool this step called: its action's tool, unless a guard stopped the action
        before it ran (a repeat, the token budget: a trip and no observation)."""
        if self.tripped is not None and self.observation is None:
            return None
        return self.tool

    @property
    def is_error(self) -> bool:
        """The step went wrong: a tool error, unreadable output or an error observation (the
        one definition the ``~error`` filter, the timeline and ``check`` all use)."""
        return self.error_kind is not None or self.parse_error is not None or self.observation_error is True

    @property
    def error_summary(self) -> str | None:
        """What went wrong in an error step, in one phrase (None when ``is_error`` is not)."""
        if self.parse_error is not None:
            return f"parse error: {self.parse_error}"
        if self.error_kind is not None:
            return f"{self.error_kind}: {self.error}"
        if self.observation_error is True:
            return f"error observation: {self.observation}"
        return None

    @property
    def all_calls(self) -> tuple[CallRecord, ...]:
        """Every call of the step (none, one, or several), each with what answered it."""
        if self.calls:
            return self.calls
        if self.tool is None:
            return ()
        return (CallRecord(self.tool, self.args, self.call, "", self.item, self.observation,
                           self.observation_error, self.error_kind, self.error),)

    @property
    def asked_policy(self) -> bool:
        """The policy was asked in this step (a plan's item runs without asking it)."""
        return self.item == 0

    def count_calls(self, counts: dict[str, list[int]]) -> None:
        """Add this step's calls to ``counts`` (tool -> [calls, failures]) in place."""
        if not self.calls:
            tool = self.called_tool  # a call a guard stopped before it ran is not one
            if tool is not None:
                made, failed = counts.get(tool, (0, 0))
                counts[tool] = [made + 1, failed + (1 if self.error_kind is not None or self.observation_error else 0)]
            return
        for call in self.calls:
            made, failed = counts.get(call.tool, (0, 0))
            counts[call.tool] = [made + 1, failed + (1 if call.failed else 0)]

    @property
    def is_repeat(self) -> bool:
        """The action (or the same unreadable output) had been proposed before, in a row for
        the consecutive brake. An answer repeats nothing, whatever counter a source wrote."""
        return self.answer is None and self.guards is not None and (self.guards.repeats[0] or 0) >= 2

    @property
    def step_tokens(self) -> int:
        return self.guards.step_tokens if self.guards is not None else 0

    @property
    def decision(self) -> str | None:
        """``approved``, ``denied`` or ``edited`` for a call that needed approval."""
        return self.approval.decision if self.approval is not None else None

    @property
    def ran_args(self) -> Any:
        """The arguments the call ran with: the edited ones, when they were edited."""
        approval = self.approval
        if approval is not None and approval.decision == "edited" and approval.args is not None:
            return approval.args
        return self.args

    def approval_text(self) -> str:
        """The decision as one sentence: ``denied by the user: not that file``."""
        approval = self.approval
        if approval is None:
            return ""
        by = "the user" if approval.by in ("", "user") else approval.by
        text = f"{approval.decision} by {by}"
        if approval.decision == "edited":
            shown = json.dumps(approval.args, ensure_ascii=False) if approval.args is not None else "(no arguments)"
            text += f": ran {approval.tool}({shown}) instead"
        if approval.reason:
            text += f" ({approval.reason})" if approval.decision == "edited" else f": {approval.reason}"
        return text

    def replay_text(self) -> str:
        """Where a replayed observation was first recorded."""
        replayed = self.replayed
        if replayed is None:
            return ""
        where = f"step {replayed.get('step')}"
        if replayed.get("run") is not None:
            where = f"run {replayed.get('run')}, {where}"
        return f"not run again: the result recorded at {where} for operation {self.key or '(no key)'}"

    def marker(self) -> str:
        """One word for the timeline: final, tripped, error, repeat, reflection, plan,
        raw, or ''."""
        if self.answer is not None:
            return "final"
        if self.tripped is not None:
            return "tripped"
        if self.is_error:
            return "error"
        if self.is_repeat:
            return "repeat"
        if self.reflection is not None:
            return "reflection"
        if self.plan is not None:
            return "plan"
        if self.raw and self.tool is None:
            return "raw"
        return ""

    def transcript(self) -> list[tuple[str, str]]:
        """The step as the policy's scratchpad shows it: (label, text) pairs."""
        lines: list[tuple[str, str]] = []
        if self.reflection is not None:
            lines.append(("Reflection", self.reflection.text))
        if self.thought:
            lines.append(("Thought", self.thought))
        if self.plan is not None:
            if self.plan.revision > 1:
                lines.append(("Replan", f"revision {self.plan.revision}: the policy planned again"))
            lines.append(("Plan", plan_text(self.plan)))
        if self.calls:
            lines.extend(("Action", call.call) for call in self.calls)
        elif self.tool is not None:
            lines.append(("Action", self.call))
        if self.item:
            lines.append(("Plan item", f"{self.item} (carried out without asking the policy)"))
        if self.approval is not None:
            lines.append(("Approval", self.approval_text()))
        if self.replayed is not None:
            lines.append(("Replayed", self.replay_text()))
        elif self.operation is not None and self.observation is None:
            lines.append(("Operation", f"{self.operation.key} started; no result was recorded"))
        if self.parse_error is not None:
            lines.append(("Output", self.output))
        if self.answer is not None:
            lines.append(("Final Answer", self.answer))
        if self.calls:
            for call in self.calls:
                if call.observation is not None:
                    lines.append(("Observation", call.observation))
                elif call.error is not None:
                    lines.append(("Error", call.error))
        elif self.observation is not None:
            lines.append(("Observation", self.observation))
        elif self.error is not None:
            lines.append(("Error", self.error))
        for record in self.raw:
            lines.append(("Raw", f"{record.source}: {record.note}".strip(": ")))
        if self.tripped is not None:
            lines.append(("Guard", self.tripped.message))
        for event in self.events:  # a debugger held the agent here (agentdbg.attach)
            if isinstance(event, ev.Paused):
                lines.append(("Paused", pause_text(event)))
        return lines


PLAN_LOOKBACK = 200  # steps a plan's progress is looked for behind the current one


@dataclass(frozen=True)
class PlanProgress:
    """Where a plan stands at a step: the plan, the step that wrote it, and each item's
    status: ``done``, ``failed``, ``current`` (carried out at this step; ``failed`` wins),
    ``next`` (the one the next step runs), ``pending``, or ``dropped`` (after a failed item:
    never run)."""

    plan: ev.PlanMade
    step: int
    statuses: tuple[str, ...]


def plan_progress(record_at: Callable[[int], StepRecord], step: int) -> PlanProgress | None:
    """The plan the step ``step`` wrote or carries out an item of, with each item's status
    at that step; None for any other step. ``record_at(n)`` reads step n."""
    current = record_at(step)
    if current.plan is None and not current.item:
        return None
    at, record = step, current
    while record.plan is None:  # back over the items already carried out
        at -= 1
        if at < 1 or step - at > PLAN_LOOKBACK:
            return None
        record = record_at(at)
        if record.plan is None and not record.item:
            return None
    plan = record.plan
    statuses = ["pending"] * len(plan.items)
    failed = False
    for number in range(at + 1, step + 1):
        item = record_at(number).item
        if 1 <= item <= len(statuses):
            bad = record_at(number).is_error
            statuses[item - 1] = "failed" if bad else "current" if number == step else "done"
            failed = failed or bad
    if failed:
        statuses = ["dropped" if status == "pending" else status for status in statuses]
    elif "pending" in statuses:
        statuses[statuses.index("pending")] = "next"
    return PlanProgress(plan, at, tuple(statuses))


def plan_text(plan: ev.PlanMade) -> str:
    """A plan's items, one numbered line each (``2. calc[18 * 2]``)."""
    return "\n".join(f"{i}. {item}" for i, item in enumerate(plan.items, 1))


def pause_text(event: ev.Paused) -> str:
    """``the agent waited 12.3 s here for the debugger (tool error: ...); resumed``."""
    why = f" ({event.reason})" if event.reason else ""
    ended = {"resumed": "then the debugger resumed it", "timeout": "then it went on by itself (pause_timeout)",
             "detached": "then the debugger detached and it went on"}.get(event.ended, event.ended)
    waited = event.waited if isinstance(event.waited, (int, float)) and not isinstance(event.waited, bool) else 0
    return f"the agent waited {waited:.1f} s here for the debugger{why}; {ended}"


def _counted(counts: dict[str, Any], key: str | None) -> dict[str, Any]:
    if key is None:
        return counts
    return {**counts, key: counts.get(key, 0) + 1}


def _call_text(event: ev.ActionTaken) -> str:
    if isinstance(event.args, str):
        return f"{event.tool}[{event.args}]"
    return f"{event.tool}({event.args!r})"


def _merge_updates(updates: list[ev.MemoryUpdate]) -> ev.MemoryUpdate:
    summaries = [u.summary for u in updates if u.summary is not None]
    return ev.MemoryUpdate(
        step=updates[0].step,
        added=[turn for u in updates for turn in u.added],
        evicted=[turn for u in updates for turn in u.evicted],
        summary=summaries[-1] if summaries else None,
        stored=[text for u in updates for text in u.stored],
    )


def _evict(buffer: Iterable[Any], evicted: list[Any]) -> list[Any]:
    """``buffer`` without the first occurrence of each evicted turn, in one pass: a memory
    that evicts out of order still replays exactly, and a huge eviction stays linear."""
    if not evicted:
        return list(buffer)
    left: dict[str, Any] = {}
    for turn in evicted:
        left[turn] = left.get(turn, 0) + 1
    kept = []
    for turn in buffer:
        if left.get(turn):
            left[turn] -= 1
        else:
            kept.append(turn)
    return kept


@dataclass(frozen=True)
class MemoryState:
    buffer: tuple[Any, ...] = ()  # recent turns, oldest first
    summary: str = ""
    semantic_size: int = 0
    recalled: tuple[Any, ...] = ()  # what recall brought back at this step
    added: tuple[Any, ...] = ()  # what changed at this step
    evicted: tuple[Any, ...] = ()
    stored: tuple[Any, ...] = ()
    summary_changed: bool = False

    def advance(self, record: StepRecord) -> MemoryState:
        update = record.memory
        if update is None:
            return replace(self, recalled=record.recalled, added=(), evicted=(), stored=(), summary_changed=False)
        buffer = _evict(self.buffer, update.evicted)
        buffer.extend(update.added)
        changed = update.summary is not None and update.summary != self.summary
        return MemoryState(
            buffer=tuple(buffer),
            summary=update.summary if update.summary is not None else self.summary,
            semantic_size=self.semantic_size + len(update.stored),
            recalled=record.recalled,
            added=tuple(update.added),
            evicted=tuple(update.evicted),
            stored=tuple(update.stored),
            summary_changed=changed,
        )


@dataclass(frozen=True)
class RunState:
    """What the debugger shows at one step; ``advance`` gives the next step's state."""

    step: int = 0
    steps: list[Any] = field(default_factory=lambda: [0, None])
    repeats: list[Any] = field(default_factory=lambda: [0, None])
    errors: list[Any] = field(default_factory=lambda: [0, None])
    tokens: list[Any] = field(default_factory=lambda: [0, None])
    step_tokens: int = 0
    tool_calls: dict[str, Any] = field(default_factory=dict)  # tool -> [calls, failures]
    error_count: int = 0  # error steps so far (tool errors and parse errors)
    parse_errors: int = 0
    repeat_count: int = 0  # steps whose action repeated an earlier one
    trips: tuple[Any, ...] = ()  # (step, guard, message)
    raw_count: int = 0
    memory: MemoryState = field(default_factory=MemoryState)
    answer: str | None = None
    outcome: str | None = None  # set once the run has ended
    verdict: dict[str, Any] | None = None  # the grader's, once the run has ended with one (run_end.verdict)
    approvals: dict[str, Any] = field(default_factory=dict)  # decision -> how many calls got it
    replayed: int = 0  # observations that were an operation's recorded result
    policy_calls: int = 0  # steps that asked the policy (a plan's items do not)
    plans: int = 0  # plans written (the first and each replan)
    reflections: int = 0  # reflection steps

    @classmethod
    def initial(cls, info: RunInfo) -> RunState:
        guards = info.guards or {}
        repeat = guards.get("repeat")
        return cls(
            steps=[0, guards.get("max_steps")],
            repeats=[0, repeat.get("threshold") if isinstance(repeat, dict) else None],
            errors=[0, guards.get("max_consecutive_errors")],
            tokens=[0, guards.get("token_budget")],
        )

    def advance(self, record: StepRecord) -> RunState:
        calls = dict(self.tool_calls)
        record.count_calls(calls)
        guards = record.guards
        trips = self.trips
        if record.tripped is not None:
            trips = trips + ((record.step, record.tripped.guard, record.tripped.message),)
        end = record.end
        return replace(
            self,
            step=record.step,
            steps=list(guards.steps) if guards else [record.step, self.steps[1]],
            repeats=list(guards.repeats) if guards else [0, self.repeats[1]],
            errors=list(guards.errors) if guards else self.errors,
            tokens=list(guards.tokens) if guards else self.tokens,
            step_tokens=guards.step_tokens if guards else 0,
            tool_calls=calls,
            error_count=self.error_count + (1 if record.is_error else 0),
            parse_errors=self.parse_errors + (1 if record.parse_error is not None else 0),
            repeat_count=self.repeat_count + (1 if record.is_repeat else 0),
            trips=trips,
            raw_count=self.raw_count + len(record.raw),
            memory=self.memory.advance(record),
            answer=record.answer if record.answer is not None else self.answer,
            outcome=end.outcome if end is not None else self.outcome,
            verdict=end.verdict if end is not None else self.verdict,
            approvals=_counted(self.approvals, record.decision),
            replayed=self.replayed + (1 if record.replayed is not None else 0),
            policy_calls=self.policy_calls + (1 if record.asked_policy else 0),
            plans=self.plans + (1 if record.plan is not None else 0),
            reflections=self.reflections + (1 if record.reflection is not None else 0),
        )

    def to_dict(self) -> dict[str, Any]:
        """For checkpoints: plain JSON, versioned."""
        m = self.memory
        data = {
            "v": STATE_VERSION,
            "step": self.step,
            "steps": self.steps,
            "repeats": self.repeats,
            "errors": self.errors,
            "tokens": self.tokens,
            "step_tokens": self.step_tokens,
            "tool_calls": self.tool_calls,
            "error_count": self.error_count,
            "parse_errors": self.parse_errors,
            "repeat_count": self.repeat_count,
            "trips": [list(t) for t in self.trips],
            "raw_count": self.raw_count,
            "memory": {
                "buffer": list(m.buffer),
                "summary": m.summary,
                "semantic_size": m.semantic_size,
                "recalled": list(m.recalled),
                "added": list(m.added),
                "evicted": list(m.evicted),
                "stored": list(m.stored),
                "summary_changed": m.summary_changed,
            },
            "answer": self.answer,
            "outcome": self.outcome,
            "approvals": dict(self.approvals),
            "replayed": self.replayed,
            "policy_calls": self.policy_calls,
            "plans": self.plans,
            "reflections": self.reflections,
        }
        if self.verdict is not None:  # only once a run has ended graded: checkpoints stay as they were
            data["verdict"] = self.verdict
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        """Read a checkpoint's state; ValueError when it is not one this version wrote."""
        if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
            raise ValueError("checkpoint state has an unknown version")
        for key in ("steps", "repeats", "errors", "tokens"):
            if not isinstance(data.get(key), list) or _check_counter(data[key]):
                raise ValueError(f"checkpoint state is malformed: {key!r} should be [count, limit or null]")
        calls = data.get("tool_calls")
        if not isinstance(calls, dict) or not all(
            isinstance(v, list) and len(v) == 2 and all(_is_count(n) for n in v) for v in calls.values()
        ):
            raise ValueError("checkpoint state is malformed: 'tool_calls' should map tools to [calls, failures]")
        trips = data.get("trips")
        if not isinstance(trips, list) or not all(
            isinstance(t, list) and len(t) == 3 and _is_count(t[0]) and isinstance(t[1], str) and isinstance(t[2], str)
            for t in trips
        ):
            raise ValueError("checkpoint state is malformed: each guard trip should be [step, guard, message]")
        for key in ("answer", "outcome"):
            if not (data.get(key) is None or isinstance(data[key], str)):
                raise ValueError(f"checkpoint state is malformed: {key!r} should be a string or null")
        verdict = data.get("verdict")  # absent from checkpoints written before verdicts: none
        if verdict is not None and (not isinstance(verdict, dict) or _check_verdict(verdict)):
            raise ValueError("checkpoint state is malformed: 'verdict' should be a grader's verdict or null")
        # The same shapes the memory events must have: the state's tiers are made of them.
        memory = data.get("memory")
        m: dict[str, Any] = memory if isinstance(memory, dict) else {}  # {}: said key by key below
        shapes = [(key, _check_texts) for key in ("buffer", "added", "evicted", "stored")] + [("recalled", _check_results)]
        for key, check in shapes:
            value = m.get(key)
            problem = "should be a list" if not isinstance(value, list) else check(value)
            if problem:
                raise ValueError(f"checkpoint state is malformed: memory {key!r} {problem}")
        if not isinstance(m.get("summary"), str):
            raise ValueError("checkpoint state is malformed: memory 'summary' should be a string")
        # Written by newer versions only: absent from older checkpoints.
        approvals = data.get("approvals", {})
        if not isinstance(approvals, dict) or not all(isinstance(k, str) and _is_count(v) for k, v in approvals.items()):
            raise ValueError("checkpoint state is malformed: 'approvals' should map decisions to counts")
        for key in ("replayed", "policy_calls", "plans", "reflections"):
            if not _is_count(data.get(key, 0)):
                raise ValueError(f"checkpoint state is malformed: {key!r} should be a count")
        # Older checkpoints do not count policy calls: every step before then asked the policy.
        found = data.get("policy_calls", data.get("step", 0))
        policy_calls = found if isinstance(found, int) and _is_count(found) else 0
        try:
            return cls(
                step=int(data["step"]),
                steps=list(data["steps"]),
                repeats=list(data["repeats"]),
                errors=list(data["errors"]),
                tokens=list(data["tokens"]),
                step_tokens=int(data["step_tokens"]),
                tool_calls={str(k): list(v) for k, v in data["tool_calls"].items()},
                error_count=int(data["error_count"]),
                parse_errors=int(data["parse_errors"]),
                repeat_count=int(data["repeat_count"]),
                trips=tuple(tuple(t) for t in data["trips"]),
                raw_count=int(data.get("raw_count", 0)),
                memory=MemoryState(
                    buffer=tuple(m["buffer"]),
                    summary=m["summary"],
                    semantic_size=int(m["semantic_size"]),
                    recalled=tuple(m["recalled"]),
                    added=tuple(m["added"]),
                    evicted=tuple(m["evicted"]),
                    stored=tuple(m["stored"]),
                    summary_changed=bool(m["summary_changed"]),
                ),
                answer=data["answer"],
                outcome=data["outcome"],
                verdict=verdict,
                approvals=dict(approvals),
                replayed=int(data.get("replayed", 0)),
                policy_calls=policy_calls,
                plans=int(data.get("plans") or 0),
                reflections=int(data.get("reflections") or 0),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"checkpoint state is malformed: {exc}") from None


@dataclass
class Run:
    """One run's events, grouped: the header, the step records and the end."""

    info: RunInfo
    records: list[StepRecord]
    end: ev.RunEnd | None
    start: ev.RunStart | None = None
    preamble: tuple[ev.Event, ...] = ()  # events before the first step (raw records of a run with no steps)

    @property
    def step_count(self) -> int:
        return len(self.records)

    def states(self) -> Iterator[RunState]:
        """The state after every step, in order (state 0, the start, first)."""
        state = RunState.initial(self.info)
        yield state
        for record in self.records:
            state = state.advance(record)
            yield state

    def state_at(self, step: int) -> RunState:
        """The state after ``step`` (0 = before the first step)."""
        state = RunState.initial(self.info)
        for record in self.records[: max(step, 0)]:
            state = state.advance(record)
        return state

    def final_state(self) -> RunState:
        return self.state_at(len(self.records))


class StepGrouper:
    """Which events make which step, said once: a ``step`` event opens a step and every
    event after it, until the next, belongs to it (``run_end`` too); a checkpoint is derived
    state, part of no step; events before the first step (but ``run_end``) are the run's
    preamble. Fed one event at a time, so a run can be grouped as it grows."""

    def __init__(self) -> None:
        self.start: ev.RunStart | None = None
        self.end: ev.RunEnd | None = None
        self.preamble: list[ev.Event] = []
        self.step = 0  # the open step's number (0: none yet)
        self.events: list[ev.Event] = []  # the open step's events so far

    def add(self, event: ev.Event) -> StepRecord | None:
        """Take one more event; the record of the step it closes when it opens the next."""
        if isinstance(event, ev.RunStart):
            self.start = self.start or event  # a second run_start starts no run here
            return None
        if isinstance(event, ev.Checkpoint):
            return None
        if isinstance(event, ev.StepStart):
            closed = self.open_record()
            self.step, self.events = event.step, [event]
            return closed
        if isinstance(event, ev.RunEnd):
            self.end = event
        if self.step:
            self.events.append(event)
        elif not isinstance(event, ev.RunEnd):
            self.preamble.append(event)
        return None

    def open_record(self) -> StepRecord | None:
        """The open step as a record so far (more of its events may still come)."""
        return StepRecord.from_events(self.step, self.events) if self.step else None


def group_run(events: Iterable[ev.Event]) -> Run:
    """Group one run's events into records (see ``StepGrouper``)."""
    grouper = StepGrouper()
    records = [record for event in events if (record := grouper.add(event)) is not None]
    last = grouper.open_record()
    if last is not None:
        records.append(last)
    return Run(RunInfo.from_event(grouper.start), records, grouper.end, grouper.start, tuple(grouper.preamble))


def split_runs(events: Iterable[ev.Event]) -> list[list[ev.Event]]:
    """A file can hold several runs (episodes): each begins at a ``run_start``."""
    runs: list[list[ev.Event]] = []
    for event in events:
        if isinstance(event, ev.RunStart) or not runs:
            runs.append([])
        runs[-1].append(event)
    return runs


@dataclass
class Tally:
    """A run's counters after a step, without the memory tiers: what ``agentdbg stats``
    reports. ``add`` folds one more step in place (the same arithmetic as
    ``RunState.advance``), so folding a million steps copies nothing."""

    step: int = 0
    steps: list[Any] = field(default_factory=lambda: [0, None])
    repeats: list[Any] = field(default_factory=lambda: [0, None])
    errors: list[Any] = field(default_factory=lambda: [0, None])
    tokens: list[Any] = field(default_factory=lambda: [0, None])
    step_tokens: int = 0
    tool_calls: dict[str, Any] = field(default_factory=dict)
    error_count: int = 0
    parse_errors: int = 0
    repeat_count: int = 0
    trips: list[Any] = field(default_factory=list)
    raw_count: int = 0
    answer: str | None = None
    outcome: str | None = None
    verdict: dict[str, Any] | None = None  # the grader's, from run_end
    approvals: dict[str, Any] = field(default_factory=dict)  # decision -> how many calls got it
    replayed: int = 0  # observations that were an operation's recorded result
    policy_calls: int = 0  # steps that asked the policy (a plan's items do not)
    plans: int = 0
    reflections: int = 0

    @classmethod
    def from_state(cls, state: RunState) -> Tally:
        return cls(state.step, list(state.steps), list(state.repeats), list(state.errors), list(state.tokens),
                   state.step_tokens, {name: list(calls) for name, calls in state.tool_calls.items()},
                   state.error_count, state.parse_errors, state.repeat_count, list(state.trips),
                   state.raw_count, state.answer, state.outcome, state.verdict, dict(state.approvals),
                   state.replayed, state.policy_calls, state.plans, state.reflections)

    def add(self, record: StepRecord) -> None:
        if record.calls:  # several calls: counted one by one; the step's other counters as usual
            record.count_calls(self.tool_calls)
        if not record.asked_policy:
            self.policy_calls -= 1  # add_parts counts every step as asking the policy
        self.plans += 1 if record.plan is not None else 0
        self.reflections += 1 if record.reflection is not None else 0
        self.add_parts(record.step, None if record.calls else record.called_tool, record.error_kind is not None,
                       record.parse_error is not None,
                       record.observation_error, record.guards, record.answer,
                       None if record.tripped is None else (record.tripped.guard, record.tripped.message),
                       len(record.raw), None if record.end is None else record.end.outcome)
        if record.end is not None and record.end.verdict is not None:
            self.verdict = record.end.verdict
        if record.decision is not None:
            self.approvals[record.decision] = self.approvals.get(record.decision, 0) + 1
        if record.replayed is not None:
            self.replayed += 1

    def add_parts(self, step: int, tool: str | None, step_error: bool, parse_error: bool,
                  observation_error: bool, guards: ev.GuardCounters | None, answer: str | None,
                  tripped: tuple[str, str] | None, raw: int, outcome: str | None) -> None:
        """One step, given by what the counters read of it (see ``add``)."""
        self.policy_calls += 1
        if tool is not None:
            made, failed = self.tool_calls.get(tool, (0, 0))
            self.tool_calls[tool] = [made + 1, failed + (1 if step_error or observation_error else 0)]
        self.step = step
        if guards is not None:
            self.steps, self.repeats = list(guards.steps), list(guards.repeats)
            self.errors, self.tokens = list(guards.errors), list(guards.tokens)
            self.step_tokens = guards.step_tokens
        else:
            self.steps, self.repeats, self.step_tokens = [step, self.steps[1]], [0, self.repeats[1]], 0
        if step_error or parse_error or observation_error:
            self.error_count += 1
        if parse_error:
            self.parse_errors += 1
        if answer is None and guards is not None and (guards.repeats[0] or 0) >= 2:
            self.repeat_count += 1
        if tripped is not None:
            self.trips.append((step, *tripped))
        self.raw_count += raw
        if answer is not None:
            self.answer = answer
        if outcome is not None:
            self.outcome = outcome
