"""The ReAct loop: ask the policy, parse, act, observe, check the guards; repeat.

``AgentRun.step()`` advances exactly one reason -> act -> observe turn and returns what
happened in it; ``ReActAgent.run()`` is that same step in a loop, so a debugger stepping a
live run and a batch run share one code path. Everything the loop does is an event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

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
from agentdbg.engine.operations import gated_dispatch
from agentdbg.engine.parsers import Action, FinalAnswer, Step, get_parser
from agentdbg.engine.policies import Policy, as_policy
from agentdbg.engine.tokens import TokenEstimator, estimate_tokens
from agentdbg.engine.tools import ToolError, ToolRegistry
from agentdbg.engine.verdicts import judge_answer

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

    def describe(self) -> str:
        """The answer, or what interrupted the run (``INTERRUPTED: ...``)."""
        if self.status == "answered":
            return self.answer or ""
        return OUTCOME_TEXT.get(self.status, self.status)


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
    trip: Trip | None = None
    outcome: Outcome | None = None  # set when the run ended in this step

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def action(self) -> Action | None:
        return self.parsed if isinstance(self.parsed, Action) else None

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
    def tool_calls(self) -> list[tuple[str, Any, str]]:
        """(tool, args, observation) for every tool call that ran: a scripted plan's audit log."""
        calls = []
        for step in self.steps:
            if step.action is not None and step.observation is not None and step.parse_error is None:
                calls.append((step.action.name, step.action.args, step.observation))
        return calls

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
            elif step.observation is not None:
                turns.append(("action", f"{step.parsed.call} -> {step.observation}"))
        return [f"[{i:02d} {HISTORY_LABELS[kind]}] {text}" for i, (kind, text) in enumerate(turns)]


def render_output(output: Any, parsed: Step | None) -> str:
    """The policy's output as it appears in the transcript: text verbatim, structured
    steps written out as ``Thought:`` / ``Action:`` lines."""
    if isinstance(output, str):
        return output
    if parsed is None:
        return f"Output: {output!r}"
    lines = [f"Thought: {parsed.thought}"] if parsed.thought else []
    if isinstance(parsed, FinalAnswer):
        lines.append(f"Final Answer: {parsed.answer if parsed.answer is not None else '(finish)'}")
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
    ):
        """``approver`` decides on each call to a dangerous tool before it runs (see
        ``agentdbg.engine.approval``); without one such calls are denied."""
        self.policy = as_policy(policy)
        self.registry = registry
        self.guards = GuardSet.of(max_steps, guards)
        self.step_budget = self.guards.step_budget
        self.repetition = self.guards.repetition
        self.errors = self.guards.errors
        self.token_budget = self.guards.tokens
        self.memory = memory
        self.tokens = tokens
        self.task_label = task_label
        self.name = name
        self.source = source
        self.expected = expected  # the right answer, when known: the run's end carries a verdict
        self.approver = approver

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
            )
        )

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def step_count(self) -> int:
        return len(self.steps)

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

    def step(self) -> StepResult:
        """Advance exactly one reason -> act -> observe turn."""
        if self.done:
            raise RuntimeError("the run has ended")
        agent = self.agent
        number = len(self.steps) + 1
        if agent.policy.exhausted:  # an empty script: the run ends before its first step
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

        # A model policy's notes (a retry, say) are events of this step, recorded as they happen.
        agent.policy.on_note = lambda note, data: emit(ev.RawRecord(step=number, source="policy", note=note, data=data))
        try:
            result.output = agent.policy.respond(prompt)
        except Exception as exc:  # a policy bug is data too: shown, not crashed on
            return self._fail(result, "policy", exc)
        finally:
            agent.policy.on_note = None

        try:
            result.parsed = self.parse(result.output)
        except ValueError as exc:
            result.parse_error = str(exc)
        written = render_output(result.output, result.parsed)
        reported = agent.policy.reported_tokens()  # a model's real usage, when it gives one
        try:
            step_tokens = reported if reported is not None else agent.tokens(prompt) + agent.tokens(written)
        except Exception as exc:  # a plugged-in tokenizer failed
            return self._fail(result, "tokens", exc)
        self.transcript += "\n" + written

        if result.parsed is not None and result.parsed.thought:
            emit(ev.Thought(step=number, text=result.parsed.thought))
        if isinstance(result.parsed, Action):
            action = result.parsed
            emit(ev.ActionTaken(step=number, tool=action.name, args=action.args, call=action.call))
        elif isinstance(result.parsed, FinalAnswer):
            pass  # accepted below, once the token budget allows it
        else:
            emit(ev.ParseFailed(step=number, message=result.parse_error or "", text=written))

        if isinstance(result.parsed, Action):
            trip = agent.guards.decide(step_tokens, result.parsed.signature(), shown_call(result.parsed.call))
        elif result.parsed is None:  # the same unreadable output again is a loop too
            trip = agent.guards.decide(step_tokens, *unreadable_signature(written))
        else:
            trip = agent.guards.decide(step_tokens, None)
        if trip is not None:
            return self._stop(result, trip, step_tokens)

        if isinstance(result.parsed, FinalAnswer):
            answer = result.parsed.answer
            if answer is not None:
                emit(ev.Answered(step=number, answer=answer))
            self._counters(result, step_tokens)
            status = "answered" if answer is not None else "finished"
            self._finish(result, Outcome(status, answer=answer, steps=number))
            return result

        key, answered_error = "", False
        if isinstance(result.parsed, Action):
            action = result.parsed
            gated = gated_dispatch(agent.registry, action.name, action.args, step=number, emit=emit,
                                   approver=agent.approver, journal=self.journal, thought=action.thought)
            key, result.decision, result.replayed = gated.key, gated.decision, gated.replayed
            if gated.text is not None:  # denied, or an operation's recorded result: nothing ran
                result.observation, answered_error = gated.text, gated.error
            else:
                value = _as_text(gated.value, action.name)
                if isinstance(value, ToolError):
                    result.error = value
                    emit(ev.StepError(step=number, kind=value.kind, message=value.message, tool=value.tool))
                    result.observation = gated.observation(value.observation)
                else:
                    result.observation = gated.observation(value)
        else:
            result.observation = f"ERROR: {result.parse_error}"
        is_error = result.error is not None or result.parse_error is not None or answered_error
        emit(ev.Observation(step=number, text=result.observation, error=is_error, key=key, replayed=result.replayed))
        self.transcript += "\nObservation: " + result.observation

        if agent.memory is not None:
            try:
                memory_events = agent.memory.record_turn(f"{written}\nObservation: {result.observation}", number)
            except Exception as exc:
                return self._fail(result, "memory", exc, step_tokens)
            for event in memory_events:
                emit(event)

        trip = agent.guards.observed(is_error) or agent.guards.step_done(number)
        if trip is not None:
            return self._stop(result, trip, step_tokens)
        self._counters(result, step_tokens)
        if agent.policy.exhausted:
            self._finish(result, Outcome("script exhausted", steps=number,
                                         message="the scripted policy has no more outputs"))
        return result

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
        result.trip = trip
        self._emit(ev.GuardTripped(step=result.step, guard=trip.guard, message=trip.message), result)
        self._finish(result, Outcome(trip.outcome, guard=trip.guard, message=trip.message, steps=result.step))
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
