"""One builder for every importer: steps in, agentdbg events out, guard counters computed.

A converter fills ``StepDraft`` objects (a step can still change after it is made: a tool
reply arrives later than its call) and ``RunBuilder.build`` emits the events in the
documented order (docs/events.md) with the counters the engine would have shown:

- ``steps``: [n, max_steps] (max_steps None unless the source's budget is known);
- ``repeats``: how many times this step's action has been proposed so far in the run
  (the ``any`` count, compared as the engine compares actions); an action that could not
  be read is compared by its text as written, so a loop on an invalid action is counted;
- ``errors``: consecutive error steps;
- ``tokens``: the running total of the usage the source recorded, ``step_tokens`` this
  step's share; both stay 0 where the source recorded none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.guards import GuardSet, unreadable_signature
from agentdbg.engine.parsers import Action


@dataclass
class RawDraft:
    source: str
    data: Any
    note: str = ""


@dataclass(eq=False)  # drafts are compared by identity: two alike steps are still two
class StepDraft:
    """One policy turn as a source recorded it."""

    thought: str = ""
    tool: str | None = None  # the action, when one could be read
    args: dict | str = ""
    call: str = ""  # the action as written
    call_id: str = ""
    parse_error: str | None = None  # why the output could not be read as an action
    output: str = ""  # the output that could not be read
    error_kind: str | None = None  # a failure the source recorded (events.ERROR_KINDS)
    error_message: str = ""
    observation: str | None = None
    observation_error: bool = False
    observation_id: str = ""
    answer: str | None = None
    tokens: int | None = None  # what this step cost, where the source recorded usage
    raw: list[RawDraft] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return self.parse_error is not None or self.error_kind is not None or self.observation_error

    def signature(self) -> str | None:
        """What the repeat counter compares; None for a step without an action."""
        if self.tool is not None:
            return Action("", self.tool, self.args).signature()
        if self.parse_error is not None:
            return unreadable_signature(self.output or self.call)[0]
        return None

    def reply(self, text: str, error: bool = False, call_id: str = "") -> None:
        self.observation = text
        self.observation_error = self.observation_error or error
        self.observation_id = call_id or self.call_id


class RunBuilder:
    """Collects one run's steps and raw records, then emits its events."""

    def __init__(self, task: str = "", *, name: str = "", source: str = "", policy: str = "",
                 tools: list[dict] | None = None, max_steps: int | None = None):
        self.task = task
        self.name = name
        self.source = source
        self.policy = policy
        self.tools: list[dict] = list(tools or [])
        self.max_steps = max_steps
        self.steps: list[StepDraft] = []
        self.raw_count = 0
        self._pending: list[RawDraft] = []

    def step(self, **fields: Any) -> StepDraft:
        """Open the next step; raw records waiting for a step go with it."""
        draft = StepDraft(**fields)
        if self._pending:
            draft.raw.extend(self._pending)
            self._pending = []
        self.steps.append(draft)
        return draft

    def raw(self, source: str, data: Any, note: str = "", *, current: bool = False,
            step: StepDraft | None = None) -> None:
        """Keep a record that could not be mapped. It is shown with the next step (the
        current one with ``current=True``, ``step`` when given, the last one when no step
        follows)."""
        self.raw_count += 1
        draft = RawDraft(source, ev.jsonable(data), note)
        if step is not None:
            step.raw.append(draft)
        elif current and self.steps:
            self.steps[-1].raw.append(draft)
        else:
            self._pending.append(draft)

    def add_tool(self, spec: dict) -> None:
        if all(t.get("name") != spec.get("name") for t in self.tools):
            self.tools.append(spec)

    def default_outcome(self) -> str:
        if self.steps and self.steps[-1].answer is not None:
            return "answered"
        return "unfinished" if self.steps else "empty"

    def build(self, *, outcome: str | None = None, answer: str | None = None,
              guard: str | None = None, message: str = "",
              total_tokens: int | None = None, verdict: dict | None = None) -> list[ev.Event]:
        """The run's events. ``outcome`` defaults to answered / unfinished / empty;
        ``guard`` records a guard that stopped the run in its last step; ``total_tokens``
        is a run-wide usage figure for a source that recorded no per-step usage (it goes
        on the last step's running total: nothing is invented per step); ``verdict`` is
        a grader's judgement the source recorded (see ``events.RunEnd``)."""
        outcome = outcome or self.default_outcome()
        if answer is None and outcome == "answered" and self.steps:
            answer = self.steps[-1].answer
        events: list[ev.Event] = [ev.RunStart(
            step=0, task=self.task, tools=self.tools,
            guards={"max_steps": self.max_steps, "repeat": None,
                    "max_consecutive_errors": None, "token_budget": None},
            policy=self.policy, name=self.name, source=self.source)]
        if not self.steps:
            events.extend(ev.RawRecord(step=0, source=r.source, data=r.data, note=r.note)
                          for r in self._pending)
            events.append(ev.RunEnd(step=0, outcome=outcome, answer=answer, steps=0,
                                    guard=guard, message=message, verdict=verdict))
            return events
        if self._pending:
            self.steps[-1].raw.extend(self._pending)
            self._pending = []
        guards = GuardSet.counting(self.max_steps)  # the engine's counters, no limit enforced
        has_usage = any(s.tokens is not None for s in self.steps)
        last = len(self.steps)
        for n, draft in enumerate(self.steps, 1):
            events.extend(_step_events(n, draft))
            guards.decide(draft.tokens or 0, draft.signature())
            if draft.observation is not None or draft.is_error:  # a call never answered moves no streak
                guards.observed(draft.is_error)
            if n == last and not has_usage and total_tokens is not None:
                guards.tokens.used = total_tokens
            events.append(guards.counters(n, draft.tokens or 0))
        if guard is not None:
            events.append(ev.GuardTripped(step=last, guard=guard, message=message))
        events.append(ev.RunEnd(step=last, outcome=outcome, answer=answer, steps=last,
                                guard=guard, message=message, verdict=verdict))
        return events


def _step_events(n: int, d: StepDraft) -> list[ev.Event]:
    out: list[ev.Event] = [ev.StepStart(step=n)]
    if d.thought:
        out.append(ev.Thought(step=n, text=d.thought))
    if d.tool is not None:
        out.append(ev.ActionTaken(step=n, tool=d.tool, args=d.args, call=d.call, id=d.call_id))
    elif d.parse_error is not None:
        out.append(ev.ParseFailed(step=n, message=d.parse_error, text=d.output))
    if d.error_kind is not None:
        out.append(ev.StepError(step=n, kind=d.error_kind, message=d.error_message,
                                tool=d.tool or ""))
    if d.observation is not None:
        out.append(ev.Observation(step=n, text=d.observation, error=d.observation_error,
                                  id=d.observation_id))
    if d.answer is not None:
        out.append(ev.Answered(step=n, answer=d.answer))
    out.extend(ev.RawRecord(step=n, source=r.source, data=r.data, note=r.note) for r in d.raw)
    return out
