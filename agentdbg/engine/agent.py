"""The ReAct loop: ask the policy, parse, act, observe, check the guards; repeat.

``AgentRun.step()`` advances exactly one reason -> act -> observe turn and returns what
happened in it; ``ReActAgent.run()`` is that same step in a loop, so a debugger stepping a
live run and a batch run share one code path. Everything the loop does is an event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from agentdbg.engine import events as ev
from agentdbg.engine.approval import Approver, Decision
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
from agentdbg.engine.operations import GatedCall, gated_dispatch
from agentdbg.engine.parallel import dispatch_calls
from agentdbg.engine.parsers import (
    Action,
    ActionPlan,
    FinalAnswer,
    ParallelCalls,
    Step,
    get_parser,
    parse_reflection,
)
from agentdbg.engine.policies import Policy, as_policy
from agentdbg.engine.texts import AGENTDBG, LoopTexts
from agentdbg.engine.tokens import TokenEstimator, estimate_tokens
from agentdbg.engine.tools import ToolError, ToolRegistry
from agentdbg.engine.verdicts import judge_answer

if TYPE_CHECKING:
    from agentdbg.engine.step_edit import StepEdit

OUTCOME_TEXT = {
    "budget exhausted": "INTERRUPTED: step budget exhausted",
    "action repeated": "INTERRUPTED: action repeated",
    "error budget exhausted": "INTERRUPTED: error budget exhausted",
    "token budget exhausted": "INTERRUPTED: token budget exhausted",
    "script exhausted": "STOPPED: the script ran out without a final answer",
    "finished": "FINISHED without an answer",
    "policy error": "STOPPED: the policy raised an exception",
    "memory error": "STOPPED: the memory raised an exception",
    "tokens error": "STOPPED: the token estimator raised an exception",
}


# What a reflecting agent adds to the prompt after a failed step (Reflexion-style).
REFLECT_CUE = ("Reflect: step {step} failed. Say what went wrong and what to do differently, "
               "as Reflection: ...")


# The ToyLLM walkthrough's pretty-trace labels, spaced exactly as it prints them.
HISTORY_LABELS = {"user": "  user", "thought": " thought", "action": "  action", "final": "  final"}


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``status`` (``answered``, ``budget exhausted``, ``action repeated``,
    ``error budget exhausted``, ``token budget exhausted``, ``script exhausted``,
    ``finished``, ``policy error``, ``memory error``, ``tokens error``), the answer if any,
    and which guard stopped it."""

    status: str
    answer: str | None = None
    guard: str | None = None
    message: str = ""
    steps: int = 0
    text: str | None = None  # what the run's texts say for this outcome, when they word it

    def describe(self) -> str:
        """The answer, or what interrupted the run (``INTERRUPTED: ...``, or the run's
        texts' own words: ``budget exhausted`` for the ToyLLM loop's)."""
        if self.status == "answered":
            return self.answer or ""
        return self.text or OUTCOME_TEXT.get(self.status, self.status)


class Memory(Protocol):
    """What the loop needs from a memory: a prompt for the policy, and a turn to remember.
    Both return the memory events they caused, so the tiers can be rebuilt from events."""

    def settings(self) -> dict[str, Any]: ...

    def reset(self) -> None: ...

    def build_context(self, task_line: str, step: int) -> tuple[str, list[ev.Event]]: ...

    def record_turn(self, turn: str, step: int) -> list[ev.Event]: ...


@dataclass
class StepResult:
    """What one step did. ``events`` are exactly the events it emitted."""

    step: int
    events: list[ev.Event] = field(default_factory=list)
    output: Any = None
    parsed: Step | None = None
    parse_error: str | None = None
    observation: str | None = None
    error: ToolError | None = None
    decision: Decision | None = None  # a dangerous tool's approval
    replayed: dict[str, Any] | None = None  # the observation is an operation's recorded result
    observations: list[str] = field(default_factory=list)  # one per call, in call order
    values: list[Any] = field(default_factory=list)  # what each call returned, its Python type kept
    reflection: str | None = None  # a reflection step's critique
    item: int = 0  # the plan item this step carried out (1-based), 0 when the policy was asked
    trip: Trip | None = None
    outcome: Outcome | None = None  # set when the run ended in this step

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def action(self) -> Action | None:
        return self.parsed if isinstance(self.parsed, Action) else None

    @property
    def actions(self) -> list[Action]:
        """The step's calls: one, several (a parallel turn), or none."""
        if isinstance(self.parsed, ParallelCalls):
            return list(self.parsed.actions)
        return [self.parsed] if isinstance(self.parsed, Action) else []

    @property
    def asked_policy(self) -> bool:
        """False for a step that carried out a plan item: no policy call."""
        return self.item == 0

    @property
    def thought(self) -> str:
        return self.parsed.thought if self.parsed is not None else ""


@dataclass
class Trace:
    """A finished (or stopped) run: its events, its steps and its outcome."""

    task: str
    events: list[ev.Event]
    steps: list[StepResult]
    outcome: Outcome
    transcript: str

    @property
    def answer(self) -> str | None:
        return self.outcome.answer

    @property
    def tool_calls(self) -> list[tuple[str, Any, Any]]:
        """(tool, args, observation) for every tool call that ran: a scripted plan's audit
        log. The observation is what the tool returned, its Python type kept (``42``, not
        ``"42"``; a ``ToolError`` for a failed call); the trace stores its text."""
        calls = []
        for step in self.steps:
            if step.parse_error is None and step.values:
                for action, value in zip(step.actions, step.values, strict=False):
                    calls.append((action.name, action.args, value))
        return calls

    @property
    def turns_used(self) -> int:
        """Tool calls made (the ToyLLM loop's "turns used": its action turns)."""
        return len(self.tool_calls)

    @property
    def policy_calls(self) -> int:
        """How many times the policy was asked (a plan's items run without asking it)."""
        return sum(1 for step in self.steps if step.asked_policy)

    def history_lines(self) -> list[str]:
        """The ToyLLM walkthrough's pretty trace: ``[00   user] task`` then thought / action / final turns."""
        turns: list[tuple[str, str]] = [("user", self.task)]
        for step in self.steps:
            if step.parsed is None:
                continue
            if step.parsed.thought:
                turns.append(("thought", step.parsed.thought))
            if isinstance(step.parsed, FinalAnswer):
                turns.append(("final", step.parsed.answer or ""))
            elif step.observations:
                for action, observation in zip(step.actions, step.observations, strict=False):
                    turns.append(("action", f"{action.call} -> {observation}"))
        if self.outcome.status != "answered" and self.outcome.text:  # e.g. "budget exhausted"
            turns.append(("final", self.outcome.text))
        return [f"[{i:02d} {HISTORY_LABELS[kind]}] {text}" for i, (kind, text) in enumerate(turns)]


def render_output(output: Any, parsed: Step | None) -> str:
    """The policy's output as it appears in the transcript: text verbatim, structured
    steps written out as ``Thought:`` / ``Action:`` lines."""
    if isinstance(output, str):
        return output
    if parsed is None:
        return f"Output: {output!r}"
    return render_step(parsed)


def render_step(parsed: Step) -> str:
    """A parsed step written out as ``Thought:`` / ``Action:`` (or ``Final Answer:``) lines."""
    lines = [f"Thought: {parsed.thought}"] if parsed.thought else []
    if isinstance(parsed, FinalAnswer):
        lines.append(f"Final Answer: {parsed.answer if parsed.answer is not None else '(finish)'}")
    elif isinstance(parsed, ActionPlan):
        lines.append("Plan:")
        lines.extend(f"{i}. {action.call}" for i, action in enumerate(parsed.actions, 1))
    elif isinstance(parsed, ParallelCalls):
        lines.extend(f"Action: {action.call}" for action in parsed.actions)
    else:
        lines.append(f"Action: {parsed.call}")
    return "\n".join(lines)


def _as_text(value: Any, tool: str) -> str | ToolError:
    """A tool's result as the observation text; a result that cannot be shown is an error too."""
    if isinstance(value, ToolError):
        return value
    try:
        return str(value)
    except Exception as exc:
        return ToolError("exception", tool, f"{type(exc).__name__} while turning {tool}'s result into text: {exc}")


def _call_id(step: int, index: int) -> str:
    """The id of call ``index`` of a step's several: unique in the run."""
    return f"call_{step}_{index}"


class ReActAgent:
    def __init__(
        self,
        policy: Policy | Callable[[str], Any],
        registry: ToolRegistry,
        max_steps: int = 10,
        guards: Iterable[RepetitionGuard | ErrorBudget | TokenBudget] = (),
        memory: Memory | None = None,
        tokens: TokenEstimator = estimate_tokens,
        task_label: str = "Question",
        name: str = "",
        source: str = "",
        expected: str | None = None,
        approver: Approver | None = None,
        texts: LoopTexts = AGENTDBG,
        reflect: bool = False,
        source_sha256: str = "",
    ):
        """``approver`` decides on each call to a dangerous tool before it runs (see
        ``agentdbg.engine.approval``); without one such calls are denied. ``texts``: the
        words the loop writes itself (``agentdbg.engine.texts``). ``max_steps=0`` runs no
        step: the run ends at once, its trace empty. ``reflect``: after a step whose
        observation is an error, the next step asks the policy to critique it (a
        ``reflection`` step) before it tries again. ``source``: the plan file the agent
        comes from, ``source_sha256`` its content's hash (both go into ``run_start``)."""
        self.policy = as_policy(policy)
        self.registry = registry
        self.texts = texts
        self.guards = GuardSet.of(max_steps, guards, allow_zero=True)
        self.step_budget = self.guards.step_budget
        self.repetition = self.guards.repetition
        self.errors = self.guards.errors
        self.token_budget = self.guards.tokens
        self.memory = memory
        self.tokens = tokens
        self.task_label = task_label
        self.name = name
        self.source = source
        self.source_sha256 = source_sha256
        self.expected = expected  # the right answer, when known: the run's end carries a verdict
        self.approver = approver
        self.reflect = reflect

    def guard_settings(self) -> dict[str, Any]:
        return {
            **self.guards.settings(),
            "token_estimator": self.token_source(),
        }

    def token_source(self) -> str:
        estimator = getattr(self.tokens, "__qualname__", type(self.tokens).__name__)
        return f"usage reported by the model, else {estimator}" if self.policy.reports_usage else estimator

    def start(self, task: str, on_event: Callable[[ev.Event], None] | None = None,
              journal: OperationJournal | None = None) -> AgentRun:
        """Begin a run that advances one ``step()`` at a time. ``journal``: the operations
        done before (an earlier run's, read from the trace this run is appended to); a new
        one by default, which still keeps a keyed call from running twice in this run."""
        return AgentRun(self, task, on_event, journal)

    def run(self, task: str, on_event: Callable[[ev.Event], None] | None = None,
            journal: OperationJournal | None = None) -> Trace:
        run = self.start(task, on_event, journal)
        while not run.done:
            run.step()
        return run.trace()


class AgentRun:
    """One run of an agent, advanced by ``step()``; ``events`` grows as it goes."""

    def __init__(self, agent: ReActAgent, task: str, on_event: Callable[[ev.Event], None] | None = None,
                 journal: OperationJournal | None = None):
        self.agent = agent
        self.task = task
        self.on_event = on_event
        self.journal = journal if journal is not None else OperationJournal()
        self.parse = get_parser(agent.policy.format)
        self.events: list[ev.Event] = []
        self.steps: list[StepResult] = []
        self.outcome: Outcome | None = None
        self.task_line = f"{agent.task_label}: {task}"
        self.transcript = self.task_line
        self.plan: list[Action] = []  # the current plan's calls; plan_next is the next to run
        self.plan_next = 0
        self.plan_revision = 0
        self.reflect_on: int | None = None  # a failed step the next step reflects on
        agent.policy.bind_tools(agent.registry.specs())
        for resettable in (agent.policy, agent.guards, agent.memory):
            if resettable is not None:
                resettable.reset()
        self._emit(
            ev.RunStart(
                step=0,
                task=task,
                tools=agent.registry.specs(),
                guards=agent.guard_settings(),
                memory=agent.memory.settings() if agent.memory is not None else None,
                policy=agent.policy.describe(),
                name=agent.name,
                source=agent.source,
                task_label=agent.task_label,
                source_sha256=agent.source_sha256,
            )
        )

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def step_count(self) -> int:
        return len(self.steps)

    @property
    def plan_pending(self) -> bool:
        return self.plan_next < len(self.plan)

    @property
    def policy_calls(self) -> int:
        return sum(1 for step in self.steps if step.asked_policy)

    def _emit(self, event: ev.Event, result: StepResult | None = None) -> None:
        self.events.append(event)
        self.journal.note(event)
        if result is not None:
            result.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def trace(self) -> Trace:
        if self.outcome is None:
            raise RuntimeError("the run has not ended; step() until done")
        return Trace(self.task, list(self.events), list(self.steps), self.outcome, self.transcript)

    def cancel(self) -> None:
        """Called from another thread: a step waiting on a slow model call gives up at once
        (the run ends with a policy error). Steps that do not wait on a model are unaffected."""
        self.agent.policy.cancel()

    def step(self, edit: StepEdit | None = None) -> StepResult:
        """Advance exactly one turn: reason -> act -> observe, one plan item, or a reflection.
        ``edit`` changes one part of it (a fork, see ``agentdbg.fork``): the thought (the
        action is kept), the action (the policy's output is replaced by ``edit.output``) or
        the observation (the tool does not run; the policy reads ``edit.text``). At a plan
        item the edited action replaces the item's call; at a reflection the thought (or
        action) edit is the reflection's text; at a step of several calls an observation
        edit stands for call ``edit.call``'s (the others run)."""
        if self.done:
            raise RuntimeError("the run has ended")
        agent = self.agent
        number = len(self.steps) + 1
        if agent.step_budget.max_steps == 0:  # a budget of no steps: nothing runs
            result = StepResult(step=0)
            text = agent.texts.budget
            self._finish(result, Outcome("budget exhausted", guard=agent.step_budget.name, steps=0, text=text,
                                         message=text or "step budget exhausted: 0 steps allowed"))
            return result
        if self.plan_pending:
            return self._plan_item(number, edit)
        if self._script_over():  # an empty script: the run ends before its first step
            result = StepResult(step=0)
            self._finish(result, Outcome("script exhausted", steps=len(self.steps),
                                         message="the scripted policy has no more outputs"))
            return result
        result = StepResult(step=number)
        self.steps.append(result)

        def emit(event: ev.Event) -> None:
            self._emit(event, result)

        emit(ev.StepStart(step=number))

        if agent.memory is not None:
            try:
                prompt, memory_events = agent.memory.build_context(self.task_line, number)
            except Exception as exc:  # a plugged-in summarizer or embedder failed
                return self._fail(result, "memory", exc)
            for event in memory_events:
                emit(event)
        else:
            prompt = self.transcript
        reflecting, self.reflect_on = self.reflect_on, None
        if reflecting is not None:
            prompt += "\n" + REFLECT_CUE.format(step=reflecting)

        # A model policy's notes (a retry, say) are events of this step, recorded as they happen.
        agent.policy.on_note = lambda note, data: emit(ev.RawRecord(step=number, source="policy", note=note, data=data))
        try:
            result.output = agent.policy.respond(prompt)
        except Exception as exc:  # a policy bug is data too: shown, not crashed on
            return self._fail(result, "policy", exc)
        finally:
            agent.policy.on_note = None
        if reflecting is not None:
            return self._reflection(result, prompt, reflecting, emit, edit)

        if edit is not None and edit.part == "action":
            result.output = edit.output
        try:
            result.parsed = self.parse(result.output)
        except ValueError as exc:
            result.parse_error = str(exc)
        if edit is not None and edit.part == "thought" and result.parsed is not None:
            result.parsed = replace(result.parsed, thought=edit.text)
            written = render_step(result.parsed)
        else:
            written = render_output(result.output, result.parsed)
        step_tokens = self._tokens(prompt, written)
        if step_tokens is None:
            return self._fail(result, "tokens", self._token_error)
        self.transcript += "\n" + written

        parsed = result.parsed
        if parsed is not None and parsed.thought:
            emit(ev.Thought(step=number, text=parsed.thought))
        if isinstance(parsed, Action):
            emit(ev.ActionTaken(step=number, tool=parsed.name, args=parsed.args, call=parsed.call))
        elif isinstance(parsed, ParallelCalls):
            for index, action in enumerate(parsed.actions, 1):
                emit(ev.ActionTaken(step=number, tool=action.name, args=action.args, call=action.call,
                                    id=_call_id(number, index)))
        elif isinstance(parsed, ActionPlan):
            emit(ev.PlanMade(step=number, items=[action.call for action in parsed.actions],
                             revision=self.plan_revision + 1))
        elif parsed is None:
            emit(ev.ParseFailed(step=number, message=result.parse_error or "", text=written))

        if isinstance(parsed, Action):
            trip = agent.guards.decide(step_tokens, parsed.signature(), shown_call(parsed.call))
        elif isinstance(parsed, ParallelCalls):
            trip = agent.guards.decide_calls(step_tokens, [(a.signature(), shown_call(a.call)) for a in parsed.actions])
        elif parsed is None:  # the same unreadable output again is a loop too
            trip = agent.guards.decide(step_tokens, *unreadable_signature(written))
        else:
            trip = agent.guards.decide(step_tokens, None)
        if trip is not None:
            return self._stop(result, trip, step_tokens)

        if isinstance(parsed, FinalAnswer):
            answer = parsed.answer
            if answer is not None:
                emit(ev.Answered(step=number, answer=answer))
            self._counters(result, step_tokens)
            status = "answered" if answer is not None else "finished"
            self._finish(result, Outcome(status, answer=answer, steps=number))
            return result

        if isinstance(parsed, ActionPlan):  # its items run in the next steps
            self.plan, self.plan_next = list(parsed.actions), 0
            self.plan_revision += 1
            return self._step_end(result, written, [], step_tokens)

        edited = edit.text if edit is not None and edit.part == "observation" else None
        if edited is not None and isinstance(parsed, ParallelCalls):
            failed = self._calls_with_edit(result, parsed, edited, max(edit.call, 1), emit)  # type: ignore[union-attr]
        elif edited is not None:  # the tool does not run: the policy reads the edited text
            failed_edit = edited.startswith("ERROR:")
            emit(ev.Observation(step=number, text=edited, error=failed_edit))
            result.observations.append(edited)
            failed = [failed_edit]
        elif isinstance(parsed, Action):
            gated = gated_dispatch(agent.registry, parsed.name, parsed.args, step=number, emit=emit,
                                   approver=agent.approver, journal=self.journal, thought=parsed.thought)
            failed = [self._observe(result, parsed, gated, emit)]
        elif isinstance(parsed, ParallelCalls):
            results = dispatch_calls(agent.registry, parsed.actions, step=number, emit=emit,
                                     approver=agent.approver, journal=self.journal,
                                     ids=[_call_id(number, index) for index in range(1, len(parsed.actions) + 1)])
            failed = [self._observe(result, action, gated, emit, _call_id(number, index))
                      for index, (action, gated) in enumerate(zip(parsed.actions, results, strict=True), 1)]
        else:
            text = agent.texts.parse_error(result.parse_error or "")
            emit(ev.Observation(step=number, text=text, error=True))
            result.observations.append(text)
            failed = [True]
        return self._step_end(result, written, failed, step_tokens)

    def _calls_with_edit(self, result: StepResult, parsed: ParallelCalls, edited: str, which: int,
                         emit: Callable[[ev.Event], None]) -> list[bool]:
        """A turn of several calls whose call ``which`` (1-based) is not run: its
        observation is ``edited``; the others run as usual."""
        number = result.step
        if which > len(parsed.actions):
            raise ValueError(f"step {number} made {len(parsed.actions)} calls; there is no call {which}")
        others = [action for index, action in enumerate(parsed.actions, 1) if index != which]
        ids = [_call_id(number, index) for index in range(1, len(parsed.actions) + 1) if index != which]
        results = iter(dispatch_calls(self.agent.registry, others, step=number, emit=emit,
                                      approver=self.agent.approver, journal=self.journal, ids=ids))
        failed = []
        for index, action in enumerate(parsed.actions, 1):
            if index == which:
                error = edited.startswith("ERROR:")
                emit(ev.Observation(step=number, text=edited, error=error, id=_call_id(number, index)))
                result.observations.append(edited)
                result.values.append(edited)
                failed.append(error)
            else:
                failed.append(self._observe(result, action, next(results), emit, _call_id(number, index)))
        return failed

    def _plan_item(self, number: int, edit: StepEdit | None = None) -> StepResult:
        """Carry out the current plan's next item: a call the policy already wrote, so
        nothing is asked of it and the step costs no tokens. ``edit`` (a fork): an action
        replaces the item's call, a thought is written before it, an observation stands
        for the call's (it does not run); the plan goes on, or ends on an error, either way."""
        agent = self.agent
        action = self.plan[self.plan_next]
        if edit is not None and edit.part == "action":
            replaced = self.parse(edit.output)
            if not isinstance(replaced, Action):
                raise ValueError(f"step {number} carries out a plan item: its action is one call")
            action = replace(replaced, thought="")
        result = StepResult(step=number, item=self.plan_next + 1)
        self.steps.append(result)

        def emit(event: ev.Event) -> None:
            self._emit(event, result)

        emit(ev.StepStart(step=number))
        result.parsed = action
        self.plan_next += 1
        written = f"Action: {action.call}"
        if edit is not None and edit.part == "thought":
            action = result.parsed = replace(action, thought=edit.text)
            emit(ev.Thought(step=number, text=edit.text))
            written = f"Thought: {edit.text}\n{written}"
        emit(ev.ActionTaken(step=number, tool=action.name, args=action.args, call=action.call, item=result.item))
        self.transcript += "\n" + written
        trip = agent.guards.decide(0, action.signature(), shown_call(action.call))
        if trip is not None:
            return self._stop(result, trip, 0)
        if edit is not None and edit.part == "observation":  # the call does not run
            failed = edit.text.startswith("ERROR:")
            emit(ev.Observation(step=number, text=edit.text, error=failed))
            result.observations.append(edit.text)
        else:
            gated = gated_dispatch(agent.registry, action.name, action.args, step=number, emit=emit,
                                   approver=agent.approver, journal=self.journal, thought=action.thought)
            failed = self._observe(result, action, gated, emit)
        if failed or not self.plan_pending:  # a failed item ends the plan: the policy is asked again
            self.plan, self.plan_next = [], 0
        return self._step_end(result, written, [failed], 0)

    def _reflection(self, result: StepResult, prompt: str, on_step: int, emit: Callable[[ev.Event], None],
                    edit: StepEdit | None = None) -> StepResult:
        """The policy's critique of step ``on_step``: into the transcript, for the retry.
        ``edit`` (a fork's thought or action) is the critique's text instead."""
        agent = self.agent
        if edit is not None and edit.part in ("thought", "action"):
            result.output = f"Reflection: {edit.text}"
        written = render_output(result.output, None) if not isinstance(result.output, dict) else \
            str(result.output.get("reflection", result.output))
        try:
            result.reflection = parse_reflection(result.output)
        except ValueError as exc:
            result.parse_error = str(exc)
        step_tokens = self._tokens(prompt, written)
        if step_tokens is None:
            return self._fail(result, "tokens", self._token_error)
        if result.reflection is not None:
            emit(ev.Reflection(step=result.step, text=result.reflection, on_step=on_step))
            written = f"Reflection: {result.reflection}"
        else:
            emit(ev.ParseFailed(step=result.step, message=f"no reflection: {result.parse_error}", text=written))
        self.transcript += "\n" + written
        trip = agent.guards.reflected(step_tokens)
        if trip is not None:
            return self._stop(result, trip, step_tokens)
        return self._step_end(result, written, [], step_tokens)

    def _tokens(self, prompt: str, written: str) -> int | None:
        reported = self.agent.policy.reported_tokens()  # a model's real usage, when it gives one
        if reported is not None:
            return reported
        try:
            return self.agent.tokens(prompt) + self.agent.tokens(written)
        except Exception as exc:  # a plugged-in tokenizer failed
            self._token_error = exc
            return None

    def _observe(self, result: StepResult, action: Action, gated: GatedCall, emit: Callable[[ev.Event], None],
                 call_id: str = "") -> bool:
        """Write one call's observation (and its error); True when it failed."""
        number = result.step
        key, failed = gated.key, False
        if gated.decision is not None:
            result.decision = result.decision or gated.decision
        if gated.replayed is not None:
            result.replayed = result.replayed or gated.replayed
        returned: Any = gated.value
        if gated.text is not None:  # denied, or an operation's recorded result: nothing ran
            text, failed = gated.text, gated.error
            returned = gated.text
        else:
            value = _as_text(gated.value, action.name)
            if isinstance(value, ToolError):
                result.error = result.error or value
                emit(ev.StepError(step=number, kind=value.kind, message=value.message, tool=value.tool, id=call_id))
                text, failed = gated.observation(self.agent.texts.tool_error(value)), True
                returned = value
            else:
                text = gated.observation(value)
        emit(ev.Observation(step=number, text=text, error=failed, id=call_id, key=key, replayed=gated.replayed))
        result.observations.append(text)
        result.values.append(returned)
        return failed

    def _step_end(self, result: StepResult, written: str, failed: list[bool], step_tokens: int) -> StepResult:
        """What every step that ran to its end does: the transcript, the memory, the guards."""
        agent = self.agent
        number = result.step
        turn = written
        if result.observations:
            result.observation = "\n".join(result.observations)
            observed = "".join(f"\nObservation: {text}" for text in result.observations)
            self.transcript += observed
            turn += observed
        if agent.memory is not None:
            try:
                memory_events = agent.memory.record_turn(turn, number)
            except Exception as exc:
                return self._fail(result, "memory", exc, step_tokens)
            for event in memory_events:
                self._emit(event, result)
        if any(failed) and agent.reflect:
            self.reflect_on = number
        trip = (agent.guards.observed_calls(failed) if failed else None) or agent.guards.step_done(number)
        if trip is not None:
            return self._stop(result, trip, step_tokens)
        self._counters(result, step_tokens)
        if self._script_over() and not self.plan_pending:
            self._finish(result, Outcome("script exhausted", steps=number,
                                         message="the scripted policy has no more outputs"))
        return result

    def _script_over(self) -> bool:
        """The policy has nothing left to say, and the run stops (``script exhausted``)
        rather than asking it once more: with texts whose scripts answer when they run
        out, a script is asked, and finishes."""
        policy = self.agent.policy
        return policy.exhausted and not (self.agent.texts.script_ends_with_answer and policy.answers_past_end)

    def _fail(self, result: StepResult, kind: str, exc: Exception, step_tokens: int = 0) -> StepResult:
        """Something the loop depends on raised: record it and end the run, never crash."""
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self._emit(ev.StepError(step=result.step, kind=kind, message=message), result)
        self._counters(result, step_tokens)
        self._finish(result, Outcome(f"{kind} error", steps=result.step, message=message))
        return result

    def _counters(self, result: StepResult, step_tokens: int) -> None:
        self._emit(self.agent.guards.counters(result.step, step_tokens), result)

    def _stop(self, result: StepResult, trip: Trip, step_tokens: int) -> StepResult:
        self._counters(result, step_tokens)
        text = self.agent.texts.budget if trip.guard == self.agent.step_budget.name else None
        if text:
            trip = replace(trip, message=text)
        result.trip = trip
        self._emit(ev.GuardTripped(step=result.step, guard=trip.guard, message=trip.message), result)
        self._finish(result, Outcome(trip.outcome, guard=trip.guard, message=trip.message, steps=result.step,
                                     text=text))
        return result

    def _finish(self, result: StepResult, outcome: Outcome) -> None:
        self.outcome = outcome
        result.outcome = outcome
        self._emit(
            ev.RunEnd(
                step=outcome.steps,
                outcome=outcome.status,
                answer=outcome.answer,
                steps=outcome.steps,
                guard=outcome.guard,
                message=outcome.message,
                verdict=None if self.agent.expected is None else judge_answer(outcome.answer, self.agent.expected),
            ),
            result,
        )
