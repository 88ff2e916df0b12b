"""Forking a recorded run at a step: change one part of step N and run on from there.

A fork is a new run. Its steps before N are the parent's, copied as recorded; step N is
run again with the edit; the steps after it are whatever the run's own policy and tools
do next. To get there the engine replays steps 1..N-1 silently on a fresh agent (fresh
tools, guards, memory and policy), so everything they hold is what it was when the parent
reached step N:

* a policy that does not ask a model (a scripted plan, rules, a grid agent) is asked
  again and must say what it said then; a model is never asked again for a recorded step:
  it "says" the recorded output, and its recorded token usage counts;
* tools run again (mock tools keep their state in memory), except a call whose operation
  key a run of the file already used: its recorded result is given again, as in any run
  appended to a trace; a dangerous call gets the decision recorded for it when that
  decision was made for the very same call (tool, arguments, operation key, call id),
  otherwise the fork's approver decides, as for a call after the edit;
* every replayed step is checked against the recording: one that comes out differently
  (the plan changed since it was recorded, a tool that is not deterministic) stops the
  fork with ``ForkError`` saying where and what, rather than fork a run that never was.

What each edit means (docs/debugger.md, "Forking a run"):

* ``observation``: the call at step N is not run; the policy reads the edited text (an
  error observation when it starts with ``ERROR:``);
* ``action``: the edited action replaces the policy's output at step N (its thought is
  kept) and runs, through the guards and approval like any other;
* ``thought``: the thought is replaced and the step's action is kept (and run again);
  later steps see the edited thought in the transcript and memory.

Steps of the other kinds (replaying steps 1..N-1 restores the plan being carried out
and a reflection still due, as the real agent reaches them):

* a plan (the step that writes it): ``action`` is the new plan, one call a line, read
  by the run's parser; ``thought`` the plan's thought; it has no observation;
* a plan's item: ``observation`` is the item's result (its call does not run; the plan
  goes on with the next item, or ends and the policy is asked again when the text is an
  error); ``action`` is one call replacing the item's; ``thought`` is written before it;
* a reflection: ``thought`` (or ``action``) is the reflection's text; no observation;
* several calls at once: ``action`` is the step's calls, one a line; ``observation``
  stands for one call's result (``StepEdit.call``, the first by default): that call does
  not run, the others do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.agent import AgentRun, ReActAgent, StepResult
from agentdbg.engine.approval import ApprovalRequest, Approver, Decision, decide
from agentdbg.engine.events import FORK_EDITS
from agentdbg.engine.journal import OperationJournal
from agentdbg.engine.parsers import Action, FinalAnswer
from agentdbg.engine.policies import Policy
from agentdbg.engine.step_edit import StepEdit, action_edit
from agentdbg.model.state import StepRecord, group_run

__all__ = ["FORK_EDITS", "ForkError", "ForkRun", "StepEdit", "action_edit", "check_editable", "make_edit",
           "step_shape"]


class ForkError(ValueError):
    """A fork that cannot be made: says which step and why."""


def is_reflection(record: StepRecord) -> bool:
    """The step critiqued a failed one (or was asked to and wrote no critique)."""
    return record.reflection is not None or (record.parse_error or "").startswith("no reflection:")


def step_shape(record: StepRecord | None) -> str:
    """What an action edit of the step writes: ``plan``, ``calls`` or ``call``."""
    if record is None:
        return "call"
    if record.plan is not None:
        return "plan"
    return "calls" if len(record.calls) > 1 else "call"


def make_edit(record: StepRecord | None, format: str, part: str, text: str, call: int = 0) -> tuple[StepEdit, Any]:
    """The edit of ``part`` of step ``record`` to ``text``, for a run whose policy writes
    ``format``: (the edit, what an action edit parses to, else None). ValueError says
    what is wrong with an action."""
    if part != "action" or (record is not None and is_reflection(record)):
        if not text.strip() and record is not None and is_reflection(record):
            raise ValueError("the reflection is empty")
        return StepEdit(part, text, call=call), None
    thought = record.thought if record is not None else ""
    edit, parsed = action_edit(format, text, thought, step_shape(record))
    if record is not None and record.item and not isinstance(parsed, Action):
        raise ValueError(f"step {record.step} carries out a plan's item: its action is one call, not "
                         f"{'an answer' if isinstance(parsed, FinalAnswer) else 'several'}")
    return edit, parsed


def check_editable(record: StepRecord, part: str, call: int = 0) -> None:
    """Raise ForkError when step ``record`` has no ``part`` to edit."""
    step = record.step
    if is_reflection(record):
        if part == "observation":
            raise ForkError(f"step {step} is a reflection: it made no call; edit its text as the thought")
        return
    if record.plan is not None and part == "observation":
        raise ForkError(f"step {step} wrote a plan: it has no observation; edit the plan (the action) or the thought")
    if call and part != "observation":
        raise ForkError("a call is chosen only to edit its observation")
    if call and len(record.calls) < 2:
        raise ForkError(f"step {step} made {'one call' if record.tool else 'no call'}: "
                        "a call is chosen only at a step of several")
    if call and call > len(record.calls):
        raise ForkError(f"step {step} made {len(record.calls)} calls: there is no call {call}")
    finished = record.tool is None and record.parse_error is None  # a final answer, or a plan's finish
    if finished and record.answer is None and record.error_kind in ("policy", "memory", "tokens"):
        raise ForkError(f"step {step} has no output to edit: the {record.error_kind} failed there ({record.error})")
    if part == "observation":
        if finished:
            raise ForkError(f"step {step} has no observation to edit: it is the final answer")
        if record.observation is None:
            why = f" ({record.tripped.message})" if record.tripped is not None else ""
            raise ForkError(f"step {step} has no observation to edit: the run stopped before its call ran{why}")
    elif part == "thought" and record.parse_error is not None:
        raise ForkError(f"step {step} has no thought to edit: its output could not be read as an action; "
                        "edit the action instead")


def recorded_output(record: StepRecord, format: str) -> Any:
    """What the policy said at a recorded step, written in its format again (for a model,
    which is not asked twice)."""
    if record.parse_error is not None:
        return record.output
    if record.reflection is not None:
        return {"reflection": record.reflection.text} if format == "script" else f"Reflection: {record.reflection.text}"
    several = [c.call for c in record.calls] if len(record.calls) > 1 else None
    if record.plan is not None:
        several = list(record.plan.items)
    if several is not None and format in ("bracket", "colon", "json", "numbered"):
        lines = [f"Thought: {record.thought}"] if record.thought else []
        if record.plan is not None:
            lines += ["Plan:", *(f"{i}. {item}" for i, item in enumerate(several, 1))]
        else:
            lines += [f"Action {i}: {c}" if format == "numbered" else f"Action: {c}" for i, c in enumerate(several, 1)]
        return "\n".join(lines)
    if len(record.calls) > 1 and format == "script":
        return {"thought": record.thought, "actions": [{"action": c.tool, "args": c.args} for c in record.calls]}
    if format == "plan":
        if record.tool is None:
            return ("finish", {} if record.answer is None else {"answer": record.answer})
        return (record.tool, record.args if isinstance(record.args, dict) else {})
    if format == "script":
        if record.tool is None:
            return {"kind": "finish", "content": record.answer or "", "thought": record.thought}
        return {"thought": record.thought, "action": record.tool,
                "args": record.args if isinstance(record.args, dict) else {}}
    lines = [f"Thought: {record.thought}"] if record.thought else []
    if record.tool is None:
        lines.append(f"Action 1: Finish[{record.answer or ''}]" if format == "numbered"
                     else f"Final Answer: {record.answer or ''}")
    elif format == "numbered":
        lines.append(f"Action 1: {record.call}")
    else:
        lines.append(f"Action: {record.call}")
    return "\n".join(lines)


class _Replaying(Policy):
    """The run's policy during a fork: for the steps already recorded, a model's recorded
    output (and usage) stands in for asking it again; any other policy is asked."""

    def __init__(self, inner: Policy, records: Sequence[StepRecord], until: int):
        self.inner = inner
        self.records = records
        self.until = until  # the last recorded step whose output is reused
        self.format = inner.format
        self.kind = inner.kind
        self.reports_usage = inner.reports_usage
        self.asks_model = inner.asks_model
        self.asked = 0
        self._recorded_tokens: int | None = None
        # A plan's items are not asked of the policy: the n-th answer is the n-th step that asked.
        self._asked_at = [record for record in records[:until] if not record.item]

    @property  # type: ignore[override]
    def on_note(self) -> Callable[[str, dict], None] | None:
        return self.inner.on_note

    @on_note.setter
    def on_note(self, value: Callable[[str, dict], None] | None) -> None:
        self.inner.on_note = value

    def reset(self) -> None:
        self.inner.reset()
        self.asked = 0

    def bind_tools(self, specs: Sequence[dict]) -> None:
        self.inner.bind_tools(specs)

    def cancel(self) -> None:
        self.inner.cancel()

    def describe(self) -> str:
        return self.inner.describe()

    @property
    def exhausted(self) -> bool:
        return self.inner.exhausted

    def reported_tokens(self) -> int | None:
        return self._recorded_tokens if self._recorded_tokens is not None else self.inner.reported_tokens()

    def respond(self, prompt: str) -> Any:
        self.asked += 1
        self._recorded_tokens = None
        if self.asks_model and self.asked <= len(self._asked_at):
            record = self._asked_at[self.asked - 1]
            self._recorded_tokens = record.step_tokens
            return recorded_output(record, self.format)
        return self.inner.respond(prompt)


def _decision(approval: ev.Approval) -> Decision:
    """A recorded decision, to be made again."""
    if approval.decision == "edited" and approval.args is not None:
        return Decision("edited", approval.by, approval.reason, dict(approval.args))
    if approval.decision == "edited":
        return Decision.approve(approval.reason, by=approval.by)
    return Decision(approval.decision, approval.by, approval.reason)


_COMPARED = (("thought", "thought"), ("tool", "tool"), ("args", "arguments"), ("answer", "answer"),
             ("parse_error", "parse error"), ("observation", "observation"),
             ("observation_error", "observation's error flag"))


def _difference(recorded: StepRecord, replayed: StepRecord) -> str | None:
    for name, label in _COMPARED:
        was, now = getattr(recorded, name), getattr(replayed, name)
        if was != now:
            return f"{label}: recorded {_short(was)}, replayed {_short(now)}"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:79] + "…"


class ForkRun:
    """A fork of ``parent_events`` (one run's events) at ``step`` with ``edit``, run by
    ``agent`` (a fresh one, made by the plan the parent ran). It steps like an
    ``AgentRun``: building it replays steps 1..step-1 (``ForkError`` when they do not
    come out as recorded) and emits the fork's ``run_start`` and those steps; the first
    ``step()`` runs the edited step, later ones carry on. ``parent`` is the parent's
    number in the file the fork goes to; ``journal`` holds the operations of the file's runs
    (``agentdbg.forking.fork_journal``: their keys are not run again; default: the parent's).
    ``approver`` decides dangerous calls from step N on, and any replayed call (or step N's
    when only its thought was edited) whose recorded decision was not made for that very
    call."""

    def __init__(self, agent: ReActAgent, task: str, parent_events: Sequence[ev.Event], step: int,
                 edit: StepEdit, *, parent: int = 1, on_event: Callable[[ev.Event], None] | None = None,
                 journal: OperationJournal | None = None, approver: Approver | None = None,
                 cancelled: Callable[[], bool] | None = None):
        grouped = group_run(parent_events)
        records = grouped.records
        if grouped.start is None:
            raise ForkError("the run has no run_start: nothing says how it was run")
        if not 1 <= step <= len(records):
            raise ForkError(f"no step {step} to fork at: the run has {len(records)} step{'s' if len(records) != 1 else ''}")
        if task != grouped.info.task:
            raise ForkError(f"the plan's task is not the recorded run's ({_short(task)} against "
                            f"{_short(grouped.info.task)}); has the plan changed since?")
        check_editable(records[step - 1], edit.part, edit.call)
        self.step_number = step
        self.edit = edit
        self.records = records
        self.on_event = on_event
        self.events: list[ev.Event] = []
        self._approver = approver
        self._registry = agent.registry
        self._used: set[int] = set()  # recorded approvals already given again (by id())
        self._silent = True
        # Up to step N: at N the output is the recorded one too (an edited action replaces it).
        agent.policy = _Replaying(agent.policy, records, step)
        agent.approver = self._approve
        self._run = AgentRun(agent, task, self._forward, OperationJournal(parent_events) if journal is None else journal)
        earlier = earlier_edits(grouped.info.fork, step, agent.policy.format, records)
        for number in range(1, step):
            if cancelled is not None and cancelled():
                raise ForkError("fork cancelled")
            if self._run.done:
                raise ForkError(f"the run does not replay as recorded: it ended at step {number - 1} "
                                f"({self._run.outcome.status if self._run.outcome else 'ended'}); "
                                "has the plan changed since it was recorded?")
            replayed = self._run.step(earlier.get(number))
            difference = _difference(records[number - 1], StepRecord.from_events(number, replayed.events))
            if difference is not None:
                raise ForkError(f"step {number} does not replay as recorded ({difference}); "
                                "has the plan (or a tool's data) changed since the run was recorded?")
        self._silent = False
        metadata = edit.metadata(parent, step)
        if earlier:  # a fork of a fork: the edits its steps were made with, replayed next time
            metadata["replays"] = [{"step": n, "edited": e.part, "text": e.text, **({"call": e.call} if e.call else {})}
                                   for n, e in sorted(earlier.items())]
        start = replace(grouped.start, fork=metadata)
        if agent.source_sha256 and agent.source_sha256 != start.source_sha256:
            start = replace(start, source=agent.source, source_sha256=agent.source_sha256)  # another plan runs it
        self._emit(start)
        for event in _prefix(parent_events, step):
            self._emit(event)

    def _forward(self, event: ev.Event) -> None:
        if not self._silent:
            self._emit(event)

    def _emit(self, event: ev.Event) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _approve(self, request: ApprovalRequest) -> Decision:
        number = request.step
        if number < self.step_number or (number == self.step_number and self.edit.part == "thought"):
            recorded = self._recorded_for(request)
            if recorded is not None:
                return _decision(recorded)
        return decide(self._approver, request)

    def _recorded_for(self, request: ApprovalRequest) -> ev.Approval | None:
        """The decision recorded at the request's step for this very call: the same tool,
        call id and operation key, and arguments the tool binds the same way. None when
        there is none: a decision is never given to another call. A denial written before
        decisions named their key serves the call with its tool, id and arguments (denying
        runs nothing); such an approval does not."""
        if not 1 <= request.step <= len(self.records):
            return None
        events = self.records[request.step - 1].events
        for approval in events:
            if not isinstance(approval, ev.Approval) or id(approval) in self._used:
                continue
            key = request.key if not approval.key and approval.decision == "denied" else approval.key
            if (approval.tool, approval.id, key) != (request.tool, request.id, request.key):
                continue
            actions = [e for e in events if isinstance(e, ev.ActionTaken) and (e.tool, e.id) == (approval.tool, approval.id)]
            tool = self._registry.get(request.tool)
            if len(actions) != 1 or tool is None:
                return None
            try:
                proposed = tool.bind(actions[0].args)
            except ValueError:
                return None
            if proposed != request.args:
                return None
            self._used.add(id(approval))
            return approval
        return None

    @property
    def done(self) -> bool:
        return self._run.done

    @property
    def step_count(self) -> int:
        return self._run.step_count

    def step(self) -> StepResult:
        """The edited step first, then one more step each time."""
        if self._run.step_count == self.step_number - 1:
            return self._run.step(self.edit)
        return self._run.step()

    def run_to_end(self) -> list[ev.Event]:
        while not self.done:
            self.step()
        return list(self.events)

    def cancel(self) -> None:
        self._run.cancel()


def earlier_edits(fork: dict | None, before: int, format: str,
                  records: Sequence[StepRecord]) -> dict[int, StepEdit]:
    """The edits a fork's steps before ``before`` were made with (its own and those of the
    forks it came from), by step: replaying them replays the fork."""
    if not fork:
        return {}
    listed = list(fork.get("replays") or []) + [fork]
    edits: dict[int, StepEdit] = {}
    for item in listed:
        if not isinstance(item, dict):
            raise ForkError("the run's fork record is damaged: it cannot be replayed")
        number, part, text = item.get("step"), item.get("edited"), item.get("text", "")
        if not isinstance(number, int) or part not in FORK_EDITS or not isinstance(text, str):
            raise ForkError("the run's fork record is damaged: it cannot be replayed")
        if number >= before:
            continue
        call = item.get("call", 0)
        if not isinstance(call, int) or isinstance(call, bool) or call < 0:
            raise ForkError("the run's fork record is damaged: it cannot be replayed")
        try:
            edits[number] = make_edit(records[number - 1] if number <= len(records) else None,
                                      format, part, text, call)[0]
        except ValueError as exc:
            raise ForkError(f"the action edited at step {number} no longer parses: {exc}") from None
    return edits


def _prefix(events: Sequence[ev.Event], step: int) -> list[ev.Event]:
    """The parent's events before step ``step``'s ``step`` event, as recorded (no header,
    no checkpoints: a checkpoint is a cache the writer makes afresh)."""
    out = []
    for event in events:
        if isinstance(event, ev.StepStart) and event.step >= step:
            break
        if isinstance(event, (ev.RunStart, ev.Checkpoint)):
            continue
        out.append(event)
    return out
