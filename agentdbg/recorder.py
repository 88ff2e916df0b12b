"""Record your own agent loop (your model client, your tools) as an agentdbg trace.

    with agentdbg.record("run.jsonl", task=question, tools=[search, calc]) as rec:
        while True:
            reply = my_model(messages)
            if reply.tool is None:
                rec.answer(reply.text, tokens=reply.usage)
                break
            step = rec.call(reply.tool, reply.args, thought=reply.text, tokens=reply.usage)
            messages.append(step.observation)

Each step is written as it happens through ``TraceWriter`` (locked, flushed event by
event, checkpointed), with the same guard counters the engine computes (``GuardSet``):
a recorded loop and the engine running the same sequence give the same trace counters,
the same ``check`` result. Limits are off unless asked for; a guard that trips ends the
run and raises ``RunEnded`` from the call that tripped it, which the ``with`` block absorbs.
See docs/recorder.md.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentdbg.attach.agent import attach_requested
from agentdbg.attach.protocol import PAUSE_TIMEOUT
from agentdbg.engine import events as ev
from agentdbg.engine.agent import Outcome
from agentdbg.engine.approval import Approver, Decision, approver_from
from agentdbg.engine.events import TOOL_ERROR_KINDS
from agentdbg.engine.guards import (
    ErrorBudget,
    GuardSet,
    RepetitionGuard,
    TokenBudget,
    Trip,
    shown_call,
    unreadable_signature,
)
from agentdbg.engine.journal import OperationJournal
from agentdbg.engine.operations import gated_dispatch
from agentdbg.engine.parsers import Action
from agentdbg.engine.tools import Tool, ToolError, ToolRegistry
from agentdbg.engine.verdicts import judge_answer
from agentdbg.recorder_inputs import (
    arguments,
    as_text,
    call_text,
    checked_text,
    describe,
    sdk_call,
    usage_tokens,
)
from agentdbg.trace import format as fmt
from agentdbg.trace.journal import read_journal
from agentdbg.trace.writer import TraceWriter

__all__ = ["ApprovalRequired", "Recorder", "RunEnded", "Step", "record", "usage_tokens"]

REPEAT_MODES = ("off", "any", "consecutive")
POLICY = "your loop (agentdbg.record)"


class RunEnded(BaseException):  # noqa: N818 - a signal, like GeneratorExit, not an error
    """The run has ended: a guard stopped it (raised by the call that tripped it: the
    action is not to be run, the answer is not accepted), or it was answered or ended
    (raised by any later recording call). The recorder's ``with`` block absorbs it, so a
    loop that never looks at ``should_stop`` still stops at the guard. A BaseException,
    like ``GeneratorExit``: an ``except Exception`` around a tool call does not swallow it."""

    def __init__(self, recorder: Recorder, outcome: Outcome):
        super().__init__(describe_outcome(outcome))
        self.recorder = recorder
        self.outcome = outcome


class ApprovalRequired(ValueError):
    """``rec.call`` was asked to run a dangerous tool, and the recorder has no approver
    (``record(approve=...)``, or ``rec.approver``): it refuses, before recording the call."""


def describe_outcome(outcome: Outcome) -> str:
    if outcome.status == "answered":
        return f"the run was answered: {outcome.answer}"
    return f"the run ended: {outcome.status}" + (f" ({outcome.message})" if outcome.message else "")


@dataclass(eq=False)
class Step:
    """One step of a recorded run, as the loop sees it. ``number`` is None while the step
    waits behind an earlier one (a second tool call of the same model turn)."""

    thought: str = ""
    tool: str | None = None
    args: dict | str = field(default_factory=dict)
    call: str = ""
    id: str = ""
    answer: str | None = None
    parse_error: str | None = None
    output: str = ""  # the output that could not be read, for a parse error
    tokens: int = 0
    number: int | None = None
    observation: str | None = None
    error: ToolError | None = None  # the tool call failed: unknown tool, bad arguments, exception, timeout
    value: Any = None  # what the tool returned, when the recorder ran it
    decision: Decision | None = None  # how a call to a dangerous tool was decided
    key: str = ""  # the call's operation key, for a tool with an idempotency_key
    replayed: dict | None = None  # the observation is that key's recorded result: the tool did not run
    counters: ev.GuardCounters | None = None
    trip: Trip | None = None
    closed: bool = False
    _observed: bool = field(default=False, repr=False)
    _error_observation: bool = field(default=False, repr=False)
    _recorder: Recorder | None = field(default=None, repr=False)
    _held: list = field(default_factory=list, repr=False)  # approval and operation events before the step opens
    _note: str = field(default="", repr=False)  # follows the observation (edited arguments)

    @property
    def is_error(self) -> bool:
        return self.error is not None or self.parse_error is not None or self._error_observation

    @property
    def waiting(self) -> bool:
        """The step asked for a tool and its observation has not been recorded yet."""
        return self.tool is not None and not self._observed and not self.closed

    def observe(self, value: Any, *, error: bool = False) -> Step:
        """Record what the tool returned (turned into text with ``str``); ``error=True``
        when that text reports a failure."""
        return self._require().observe(value, error=error, step=self)

    def fail(self, error: BaseException | str, *, kind: str = "exception") -> Step:
        """Record that the tool call failed: an exception (the observation is ``ERROR:
        Type: message``, as the engine writes it) or a message; ``kind`` is one of
        unknown_tool, bad_args, exception, timeout."""
        return self._require().fail(error, kind=kind, step=self)

    def run(self) -> Step:
        """Run this step's action through the recorder's tools (the engine's registry:
        errors, bad arguments and time limits become error observations) and record it."""
        return self._require()._run(self)

    def _require(self) -> Recorder:
        if self._recorder is None:
            raise ValueError("this step belongs to no recorder")
        return self._recorder


def record(path: str | Path, task: str = "", *, tools: Iterable[Any] | ToolRegistry = (),
           max_steps: int | None = None, repeat: str | RepetitionGuard = "off", repeat_threshold: int | None = None,
           max_consecutive_errors: int | None = None, token_budget: int | None = None,
           tool_timeout: float | None = None, name: str = "", source: str = "", policy: str = POLICY,
           attach: bool | str | None = None, pause_timeout: float = PAUSE_TIMEOUT,
           mode: str = "append", fsync: bool = False, checkpoint_every: int = fmt.CHECKPOINT_EVERY,
           on_step_written: Callable[[Step], None] | None = None, expected: str | None = None,
           approve: Any = None) -> Recorder:
    """Record one run of your own loop to the trace at ``path`` (see ``Recorder``).

    ``tools``: plain functions (described from their type hints), ``Tool`` objects, or a
    ``ToolRegistry``: what the debugger's tool pane lists and what ``rec.call`` runs.
    Guards, as in plans (all off unless given: the recorder only counts): ``max_steps``;
    ``repeat`` ``"any"`` (stop the first time an action comes back) or ``"consecutive"``
    (``repeat_threshold`` times in a row, default 3), or a ``RepetitionGuard``;
    ``max_consecutive_errors``; ``token_budget`` (the usage you report). ``tool_timeout``:
    seconds a tool run by ``rec.call`` may take (None: no limit, run in your thread).
    ``mode``: ``"append"`` adds the run to an existing trace (several runs per file),
    ``"create"`` refuses a file that is not empty, ``"replace"`` empties a trace.
    ``on_step_written(step)`` is called after each step's last event is written.
    ``expected``: the right answer, when you know it: the run's end then says whether the
    final answer matches it (exactly, once whitespace and case are normalised).
    ``approve`` decides on each ``rec.call`` of a dangerous tool before it runs: a function
    of an ``ApprovalRequest`` returning a ``Decision`` (or True / False), ``"always"`` or
    ``"never"``; without it such a call raises ``ApprovalRequired``. Tools with an
    ``idempotency_key`` run once per key in the trace: appending to a trace reads the
    earlier runs' results first.
    ``attach``: let a debugger open on the trace pause the agent at its breakpoints (a
    socket beside the trace, see ``Recorder.attach``); ``"wait"``: and the first step
    waits for one to attach; None: as the ``AGENTDBG_ATTACH`` environment variable says
    (``1`` or ``wait``). ``pause_timeout``: seconds a paused (or waiting) agent waits."""
    guards = _guard_set(max_steps, repeat, repeat_threshold, max_consecutive_errors, token_budget)
    registry = tools if isinstance(tools, ToolRegistry) else _registry(tools, tool_timeout)
    approver = approver_from(approve)
    writer = TraceWriter(path, mode=mode, fsync=fsync, checkpoint_every=checkpoint_every,
                         header={"source": source} if source else None)
    try:
        # Read under the writer's lock, before this run adds to the file: what earlier runs did.
        keyed = any(tool.idempotency_key is not None for tool in registry)
        journal = read_journal(writer.target) if keyed and writer.mode == "append" else None
    except BaseException:
        writer.close()
        raise
    recorder = Recorder(writer, task, registry=registry, guards=guards, name=name, source=source, policy=policy,
                        on_step_written=on_step_written, expected=expected, approver=approver, journal=journal)
    attaching = attach_requested(attach)
    if attaching is not None:
        try:
            recorder.attach(pause_timeout=pause_timeout, wait=attaching == "wait")
        except BaseException:
            writer.close()
            raise
    return recorder


def _guard_set(max_steps: int | None, repeat: str | RepetitionGuard, threshold: int | None,
               errors: int | None, tokens: int | None) -> GuardSet:
    for label, value in (("max_steps", max_steps), ("max_consecutive_errors", errors), ("token_budget", tokens),
                         ("repeat_threshold", threshold)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{label} should be a whole number or None, got {type(value).__name__}")
    if isinstance(repeat, RepetitionGuard):
        repetition = repeat
    elif repeat in REPEAT_MODES:
        if repeat == "off":
            repetition = RepetitionGuard("any", threshold, active=False)
        else:
            repetition = RepetitionGuard(repeat, threshold)
    else:
        raise ValueError(f"repeat should be one of {', '.join(REPEAT_MODES)} or a RepetitionGuard, got {repeat!r}")
    return GuardSet.of(max_steps, [repetition, ErrorBudget(errors), TokenBudget(tokens)])


def _registry(tools: Iterable[Any], timeout: float | None) -> ToolRegistry:
    if isinstance(tools, (str, bytes, Mapping)) or callable(tools):
        raise TypeError("tools should be a list of functions or Tool objects")
    registry = ToolRegistry(default_timeout=timeout)
    for item in tools:
        registry.register(item if isinstance(item, Tool) else Tool.from_function(item))
    return registry


class Recorder:
    """One run being recorded. Made by ``agentdbg.record(...)``; use it as a context
    manager (the run ends and the file is released when the block ends, however it ends).

    Each model turn is one step: ``action`` (a tool call you run yourself, then
    ``step.observe``), ``call`` (a tool call the recorder runs through its tools),
    ``answer`` (the final answer: the run ends), ``parse_error`` (output that is neither).
    Several tool calls in one turn are one step each, in order; the turn's thought and
    token usage go with the first. ``reply`` is a text turn that is the answer if the run
    ends next (as the SDK wrappers record a reply without tool calls).

    ``approver`` decides on calls to dangerous tools that ``call`` runs; swap it at any time
    (``rec.approver = ...``): it is asked in the loop's thread, with the recorder held, so
    an approver that waits for a person pauses the agent there. ``journal``: the results
    of operation keys used before (``record`` reads them from the trace it appends to).

    Thread-safe: tools may report from other threads."""

    _channel: Any = None  # an attached debugger's channel (attach())

    def __init__(self, writer: TraceWriter, task: str = "", *, registry: ToolRegistry | None = None,
                 guards: GuardSet | None = None, name: str = "", source: str = "", policy: str = POLICY,
                 on_step_written: Callable[[Step], None] | None = None, expected: str | None = None,
                 approver: Approver | None = None, journal: OperationJournal | None = None):
        self.task = task
        self.expected = expected
        self.registry = registry if registry is not None else ToolRegistry(default_timeout=None)
        self.guards = guards if guards is not None else GuardSet.of(None)
        self.guards.reset()
        self.name = name
        self.source = source
        self.policy = policy
        self.on_step_written = on_step_written
        self.approver = approver
        self.journal = journal if journal is not None else OperationJournal()
        self.outcome: Outcome | None = None
        self._writer = writer
        self._lock = threading.RLock()
        self._extra_specs: list[dict] = []  # tools known by their description only (an SDK request's)
        self._started = False
        self._queue: deque[Step] = deque()  # proposed, not closed; the first is the open one
        self._count = 0  # steps opened
        self._reply: Step | None = None  # a text turn: the answer if the run ends next
        self._pending_hook: Step | None = None  # an answer's step, told once run_end is written
        self._turn: list[Step] = []  # the latest model turn's steps, found by call id

    # --- what the loop asks ------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def should_stop(self) -> bool:
        """The run has ended (answered, stopped by a guard, or ended)."""
        return self.outcome is not None

    @property
    def stop_reason(self) -> str | None:
        """Why the run ended (``action repeated again: search(...)``, ``answered``), or None."""
        if self.outcome is None:
            return None
        return self.outcome.message or self.outcome.status

    @property
    def started(self) -> bool:
        """The run's first line is written: its task and tool list are fixed."""
        return self._started

    @property
    def step_count(self) -> int:
        return self._count

    @property
    def waiting(self) -> list[Step]:
        """The steps whose tool calls have no observation yet, oldest first."""
        return [step for step in self._queue if step.waiting]

    def tool_specs(self) -> list[dict]:
        """The tools as the trace lists them."""
        specs = self.registry.specs()
        known = {spec["name"] for spec in specs}
        return specs + [spec for spec in self._extra_specs if spec["name"] not in known]

    def add_tool_specs(self, specs: Iterable[dict]) -> None:
        """Tools known only by their description (e.g. from a model request's tool list), for
        the trace's tool list. Ignored once the run's first step is written."""
        with self._lock:
            for spec in specs:
                if isinstance(spec, dict) and isinstance(spec.get("name"), str) and not self._started:
                    if all(s["name"] != spec["name"] for s in self._extra_specs):
                        self._extra_specs.append(ev.jsonable(spec))

    def attach(self, *, pause_timeout: float = PAUSE_TIMEOUT, wait: bool = False) -> None:
        """Listen for a debugger beside the trace (``FILE.agentdbg.sock``): one open on the
        trace can then pause the agent after a step it breaks at, until the user goes on,
        ``pause_timeout`` seconds pass, or it detaches; each pause is written to the trace
        as a ``pause`` event. ``wait``: the first step waits (``pause_timeout`` at most)
        for a debugger to attach. Raises ``agentdbg.attach.protocol.ChannelError`` when
        the socket cannot be made there. See docs/recorder.md."""
        from agentdbg.attach.agent import AgentChannel

        with self._lock:
            if self._channel is None:
                self._channel = AgentChannel(self._writer.path, pause_timeout=pause_timeout, wait=wait)

    @property
    def channel(self) -> Any:
        """The debugger's channel (``agentdbg.attach.agent.AgentChannel``), once attached."""
        return self._channel

    def wrap(self, client: Any) -> Any:
        """An ``openai`` or ``anthropic`` SDK client (sync or async) that records each model
        call of this run: see ``agentdbg.integrations``."""
        package = type(client).__module__.split(".")[0]
        if package == "openai":
            from agentdbg.integrations.openai import wrap
        elif package == "anthropic":
            from agentdbg.integrations.anthropic import wrap
        else:
            raise TypeError(f"wrap() takes an openai or anthropic client, got {type(client).__name__}")
        return wrap(client, self)

    # --- recording steps ---------------------------------------------------------------

    def action(self, tool: str, args: Mapping[str, Any] | str | None = None, *, thought: str = "",
               tokens: Any = None, id: str = "", call: str = "") -> Step:
        """The model asked for ``tool`` with ``args`` (an object, JSON object text, or one
        positional string). Run it yourself and record its result with ``step.observe(...)``
        or ``step.fail(...)``; raises ``RunEnded`` if a guard stops the run here."""
        return self.actions([(tool, args, id)], thought=thought, tokens=tokens, call=call)[0]

    def actions(self, calls: Iterable[Any], *, thought: str = "", tokens: Any = None, call: str = "") -> list[Step]:
        """Several tool calls from one model turn: ``(tool, args)`` or ``(tool, args, id)``
        tuples, or the SDKs' tool-call objects. One step each, opened in order as the
        earlier ones get their observations; the thought and tokens go with the first."""
        steps = [self._action_step(item, call) for item in calls]
        if not steps:
            raise ValueError("no tool calls given")
        steps[0].thought = checked_text(thought, "thought")
        steps[0].tokens = usage_tokens(tokens)
        return self._propose(steps)

    def call(self, tool: Any = None, args: Mapping[str, Any] | str | None = None, *, thought: str = "",
             tokens: Any = None, id: str = "") -> Step:
        """Run a tool call through the recorder's tools and record it: exceptions, time
        limits, bad arguments and unknown tools become error observations, as in the engine.
        ``tool``: a name, one of the functions given in ``tools``, or an SDK tool-call object.
        With the ``id`` of a step an SDK wrapper already recorded, that step is run.
        Returns the step: ``step.observation`` (text for the model), ``step.error``,
        ``step.value`` (what the tool returned)."""
        with self._lock:
            sdk_name, _, sdk_id, _ = sdk_call(tool)
            found = self._find(id or sdk_id)
            if found is not None:
                if found.parse_error is not None:
                    return found  # arguments that could not be read: recorded, never run
                return self._run(found)
            if sdk_name is not None:
                self._check_approver(sdk_name)
                step = self.actions([tool], thought=thought, tokens=tokens)[0]
                return self._run(step) if step.waiting else step
            if tool is None:
                raise ValueError(f"no step waits with the call id {id!r}" if id else "call() needs a tool")
            if callable(tool) and not isinstance(tool, str):
                tool = self._name_of(tool)
            if isinstance(tool, str):
                self._check_approver(tool)  # before the call is recorded
            step = self.action(tool, args, thought=thought, tokens=tokens, id=id)
            return self._run(step) if step.waiting else step  # arguments that cannot be read are not run

    def answer(self, text: str, *, thought: str = "", tokens: Any = None) -> Step:
        """The final answer: the run ends (``answered``), unless the token budget is over."""
        step = Step(thought=checked_text(thought, "thought"), answer=checked_text(text, "answer"), tokens=usage_tokens(tokens))
        return self._propose([step])[0]

    def parse_error(self, message: str, *, text: str = "", thought: str = "", tokens: Any = None) -> Step:
        """The model's output could be read neither as a tool call nor as an answer.
        ``message`` says why; the observation is ``ERROR: message``, as the engine writes it."""
        message = checked_text(message, "message")
        step = Step(thought=checked_text(thought, "thought"), parse_error=message, output=checked_text(text, "text"),
                    tokens=usage_tokens(tokens), observation=f"ERROR: {message}", _observed=True,
                    _error_observation=True)
        return self._propose([step])[0]

    def reply(self, text: str, *, tokens: Any = None) -> None:
        """A turn of text without a tool call: the final answer if the run ends next, a
        step with that thought if the loop goes on."""
        with self._lock:
            self._check_running()
            self._settle_reply()
            self._reply = Step(answer=checked_text(text, "reply"), tokens=usage_tokens(tokens), _recorder=self)

    def observe(self, value: Any, *, error: bool = False, id: str = "", step: Step | None = None) -> Step:
        """The result of a tool call: for ``step``, the waiting step with call ``id``, or the
        oldest waiting step. Raises ``RunEnded`` when a guard stops the run at this step."""
        with self._lock:
            target = self._target(step, id)
            text = value if isinstance(value, str) else as_text(value)
            if isinstance(text, ToolError):
                if not text.tool:
                    text = ToolError(text.kind, target.tool or "", text.message)
                target.error, target.observation = text, text.observation
            else:
                target.observation = text
                target.value = value
            if target._note:
                target.observation = f"{target.observation}\n{target._note}"
            target._observed = True
            target._error_observation = bool(error) or target.error is not None
            self._advance()
            return target

    def fail(self, error: BaseException | str, *, kind: str = "exception", id: str = "",
             step: Step | None = None) -> Step:
        """A tool call failed (see ``Step.fail``)."""
        if kind not in TOOL_ERROR_KINDS:
            raise ValueError(f"kind should be one of {', '.join(TOOL_ERROR_KINDS)}, got {kind!r}")
        message = describe(error) if isinstance(error, BaseException) else checked_text(error, "error")
        with self._lock:
            target = self._target(step, id)
            failure = ToolError(kind, target.tool or "", message)
            target.error, target.observation = failure, failure.observation
            target._observed = target._error_observation = True
            self._advance()
            return target

    def end(self, outcome: str | None = None, *, message: str = "") -> None:
        """End the run now. A pending ``reply`` becomes the answer unless ``outcome`` is
        given; otherwise the outcome is ``unfinished`` (the loop stopped without an answer).
        Steps still waiting for observations are written without them."""
        with self._lock:
            if self.outcome is not None:
                return
            if self._reply is not None and outcome is None:
                reply, self._reply = self._reply, None
                self._close_waiting()
                self._queue.append(reply)
                self._advance(closing=True)
                if self.outcome is not None:
                    return
            self._settle_reply()
            self._close_waiting()
            self._advance(closing=True)
            if self.outcome is None:
                why = message or ("the loop stopped without a final answer" if outcome is None else "")
                self._finish(Outcome(outcome or "unfinished", steps=self._count, message=why))

    def close(self) -> None:
        """End the run (if it has not ended) and release the trace file."""
        with self._lock:
            try:
                self.end()
            finally:
                self._writer.close()
                self._detach()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or (isinstance(exc, RunEnded) and exc.recorder is self):
            self.close()
            return exc is not None
        with self._lock:
            try:
                if self.outcome is None:
                    self._crashed(exc)
            except Exception:  # the trace cannot take more (disk full): the loop's error matters more
                pass
            finally:
                self._writer.close()
                self._detach()
        return False

    def _detach(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    # --- the queue of steps --------------------------------------------------------------

    def _action_step(self, item: Any, call: str) -> Step:
        if isinstance(item, (tuple, list)):
            if not 2 <= len(item) <= 3:
                raise ValueError(f"a tool call is (tool, args) or (tool, args, id), got {len(item)} items")
            tool, args, id = (*item, "")[:3]
            strict = False
        else:
            tool, args, id, strict = sdk_call(item)
            if tool is None:
                raise TypeError(f"not a tool call: {type(item).__name__}")
        tool = checked_text(tool, "tool")
        if not tool:
            raise ValueError("a tool call needs the tool's name")
        args, why = arguments(args, strict)
        id = checked_text(id or "", "id")
        if why is not None:  # the model wrote arguments that cannot be read: a parse error
            written = f"{tool} {args}"
            return Step(parse_error=f"tool call {tool!r}: {why}", output=written, id=id, call=written,
                        observation=f"ERROR: tool call {tool!r}: {why}", _observed=True, _error_observation=True)
        return Step(tool=tool, args=args, id=id, call=call or call_text(tool, args))

    def _propose(self, steps: list[Step]) -> list[Step]:
        """A new model turn: earlier calls left without observations are written without
        them, then these steps are queued and opened in order."""
        with self._lock:
            self._check_running()
            self._settle_reply()
            self._close_waiting()
            for step in steps:
                step._recorder = self
                self._queue.append(step)
            self._turn = steps
            self._advance()
            return steps

    def _settle_reply(self) -> None:
        """A text turn followed by more of the run: a step with that thought."""
        if self._reply is not None:
            reply, self._reply = self._reply, None
            reply.thought, reply.answer = reply.answer or "", None
            self._queue.append(reply)

    def _close_waiting(self) -> None:
        for step in self._queue:
            if step.waiting:
                step.closed = True  # no observation will come: written without one

    def _advance(self, closing: bool = False) -> None:
        """Write what the queue allows: open the first step, close it when it is complete,
        and so on. A trip ends the run and raises RunEnded (not while ``closing``)."""
        while self._queue and self.outcome is None:
            head = self._queue[0]
            if head.number is None:
                self._open(head)
                if self.outcome is not None:
                    break
            if head.tool is not None and not head._observed and not head.closed and not closing:
                return  # waiting for its observation
            self._queue.popleft()
            self._close(head, closing)
        if self.outcome is not None:
            self._drop_queue()
            if not closing and self.outcome.guard is not None:
                raise RunEnded(self, self.outcome)

    def _open(self, step: Step) -> None:
        self._start()
        self._count += 1
        step.number = number = self._count
        self._write(ev.StepStart(step=number))
        if step.thought:
            self._write(ev.Thought(step=number, text=step.thought))
        if step.tool is not None:
            self._write(ev.ActionTaken(step=number, tool=step.tool, args=step.args, call=step.call, id=step.id))
            for held in step._held:  # the call ran (or was decided) before its step's turn came
                self._write(replace(held, step=number))
            step._held.clear()
            trip = self.guards.decide(step.tokens, Action("", step.tool, step.args).signature(), shown_call(step.call))
        elif step.parse_error is not None:
            self._write(ev.ParseFailed(step=number, message=step.parse_error, text=step.output))
            trip = self.guards.decide(step.tokens, *unreadable_signature(step.output or step.parse_error))
        else:  # an answer, or a turn of text alone
            trip = self.guards.decide(step.tokens, None)
        if trip is not None:
            self._stop(step, trip)
        elif step.answer is not None:
            self._write(ev.Answered(step=number, answer=step.answer))
            self._step_written(step, self.guards.counters(number, step.tokens))
            self._finish(Outcome("answered", answer=step.answer, steps=number))

    def _close(self, step: Step, closing: bool) -> None:
        number = step.number
        if step.error is not None:
            self._write(ev.StepError(step=number, kind=step.error.kind, message=step.error.message,
                                     tool=step.error.tool))
        if step.observation is not None:
            self._write(ev.Observation(step=number, text=step.observation, error=step.is_error, id=step.id,
                                       key=step.key, replayed=step.replayed))
        trip = None
        if step._observed:
            trip = self.guards.observed(step.is_error)
        if not closing and (step._observed or step.tool is None):
            trip = trip or self.guards.step_done(number)
        if trip is not None:
            self._stop(step, trip)
        else:
            self._step_written(step, self.guards.counters(number, step.tokens))

    def _stop(self, step: Step, trip: Trip) -> None:
        step.trip = trip
        counters = self.guards.counters(step.number, step.tokens)
        self._write(counters)
        self._write(ev.GuardTripped(step=step.number, guard=trip.guard, message=trip.message))
        self._finish(Outcome(trip.outcome, guard=trip.guard, message=trip.message, steps=step.number))
        step.counters, step.closed = counters, True
        self._hook(step)

    def _step_written(self, step: Step, counters: ev.GuardCounters) -> None:
        self._write(counters)
        step.counters, step.closed = counters, True
        if step.answer is None:
            self._hook(step)
        else:  # the answer's step ends with run_end: the hook sees it written whole
            self._pending_hook = step

    def _hook(self, step: Step) -> None:
        # The seam for live debugging: called after the step's last line is flushed, in
        # the loop's thread, before the loop goes on; a hook that blocks pauses the agent.
        if self.on_step_written is not None:
            self.on_step_written(step)
        if self._channel is not None and step.number is not None:
            # An attached debugger may hold the agent here; the pause is written to the step.
            pause = self._channel.step_written(step.number, self._writer.end_offset, ended=self.outcome is not None)
            if pause is not None:
                self._write(pause.event())

    def _finish(self, outcome: Outcome) -> None:
        self._start()
        self.outcome = outcome
        verdict = None if self.expected is None else judge_answer(outcome.answer, self.expected)
        self._write(ev.RunEnd(step=outcome.steps, outcome=outcome.status, answer=outcome.answer,
                              steps=outcome.steps, guard=outcome.guard, message=outcome.message,
                              verdict=verdict))
        pending = self._pending_hook
        if pending is not None:
            self._pending_hook = None
            self._hook(pending)

    def _drop_queue(self) -> None:
        for step in self._queue:
            step.closed = True  # the run ended before these steps: they never happened
        self._queue.clear()

    def _crashed(self, exc: BaseException) -> None:
        """An exception escaped the loop: the open step (or a new one) carries it, and the
        run ends saying so (``interrupted`` for Ctrl-C)."""
        self._settle_reply()
        head = next((s for s in self._queue if s.number is not None and not s.closed), None)
        message = describe(exc)
        if isinstance(exc, KeyboardInterrupt):
            self._close_waiting()
            self._advance(closing=True)
            if self.outcome is None:
                self._finish(Outcome("interrupted", steps=self._count, message=message))
            return
        if head is None:
            self._close_waiting()
            self._advance(closing=True)
            if self.outcome is not None:
                return
            self._start()
            self._count += 1
            head = Step(number=self._count, _recorder=self)
            self._write(ev.StepStart(step=head.number))
        self._queue.clear()
        self._write(ev.StepError(step=head.number, kind="exception", message=message, tool=head.tool or ""))
        head.counters, head.closed = self.guards.counters(head.number, head.tokens), True
        self._write(head.counters)
        self._finish(Outcome("exception", steps=head.number, message=message))
        self._hook(head)

    # --- helpers ---------------------------------------------------------------------------

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._write(ev.RunStart(step=0, task=self.task, tools=self.tool_specs(),
                                    guards={**self.guards.settings(), "token_estimator": "usage reported by the loop"},
                                    policy=self.policy, name=self.name, source=self.source))

    def _write(self, event: ev.Event) -> None:
        self._writer.write(event)
        self.journal.note(event)

    def _check_running(self) -> None:
        if self.outcome is not None:
            raise RunEnded(self, self.outcome)

    def _find(self, id: str) -> Step | None:
        """The step of the latest model turn with call ``id``."""
        if not id:
            return None
        return next((step for step in self._turn if step.id == id), None)

    def _target(self, step: Step | None, id: str) -> Step:
        self._check_running()
        if step is not None:
            if step._recorder is not self:
                raise ValueError("that step belongs to another recorder")
            target = step
        elif id:
            target = self._find(id)
            if target is None:
                raise ValueError(f"no step waits for an observation with the call id {id!r}")
        else:
            target = next((s for s in self._queue if s.waiting), None)
            if target is None:
                raise ValueError("no step is waiting for an observation")
        if target._observed:
            raise ValueError(f"step {target.number} already has its observation")
        if target.closed:
            raise ValueError(f"step {target.number} was written without an observation: "
                             "the model's next turn came before it")
        if target.tool is None:
            raise ValueError("only a tool call has an observation")
        return target

    def _run(self, step: Step) -> Step:
        with self._lock:
            self._target(step, "")
            self._check_approver(step.tool)

            def emit(event: ev.Event) -> None:
                if step.number is not None:
                    self._write(event)
                else:
                    step._held.append(event)  # written when the step opens, after its action

            gated = gated_dispatch(self.registry, step.tool, step.args, step=step.number or 0, emit=emit,
                                   approver=self.approver, journal=self.journal, thought=step.thought, id=step.id)
            step.decision, step.key, step.replayed, step._note = gated.decision, gated.key, gated.replayed, gated.note
            if gated.text is None:
                return self.observe(gated.value, step=step)
            # Denied, or the key's recorded result: the tool did not run.
            step.observation, step._observed, step._error_observation = gated.text, True, gated.error
            self._advance()
            return step

    def _check_approver(self, name: str | None) -> None:
        tool = self.registry.get(name) if name else None
        if tool is not None and tool.dangerous and self.approver is None:
            raise ApprovalRequired(f"{name} is a dangerous tool: rec.call runs it only with an approver; pass "
                                   "approve=... to agentdbg.record (a function of the request, \"always\" or \"never\"), "
                                   "or run it yourself with rec.action and record the result with step.observe")

    def _name_of(self, fn: Callable[..., Any]) -> str:
        for tool in self.registry:
            if tool.fn is fn or getattr(tool.fn, "__wrapped__", None) is fn:
                return tool.name
        shown = getattr(fn, "__name__", repr(fn))
        raise ValueError(f"{shown} is not one of this run's tools; give it in record(tools=[...])")
