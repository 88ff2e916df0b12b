"""What if a run had had other guards? Re-score it without running it again.

A run's recorded steps are folded through a fresh ``GuardSet`` (the engine's own guards,
asked at the points the engine asks them), which finds the first step where the new
guards would have stopped it. From that and the run's verdict follow what the stop would
have saved (steps and tokens after it) and whether it was worth it:

- ``good_stop``: it stops a run judged wrong, or one that ended without an answer;
- ``false_stop``: it cuts a run judged correct;
- ``ungraded_stop``: it stops a run that answered with no judgement (or never ended);
- ``let_through``: the run ends as recorded;
- ``same_stop``: the new guards stop it where it ended anyway, without an answer;
- ``runs_on``: the run was stopped by a guard the new settings do not trip: it would have
  gone on past its recording, and what it would then have done is unknown.

Pure: events in, figures out; nothing is run, nothing is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.engine.guards import (
    ErrorBudget,
    GuardSet,
    RepetitionGuard,
    TokenBudget,
    Trip,
    shown_call,
    unreadable_signature,
)
from agentdbg.engine.parsers import Action
from agentdbg.engine.verdicts import Verdict
from agentdbg.model.state import StepRecord

STOPS = ("good_stop", "false_stop", "ungraded_stop")  # the effects that change a run
EFFECTS = STOPS + ("same_stop", "runs_on", "let_through")
STOPPED_OUTCOMES = {"budget exhausted", "action repeated", "error budget exhausted", "token budget exhausted"}
CANCEL_EVERY = 256  # steps between looks at a cancel request


@dataclass(frozen=True)
class GuardSettings:
    """The guards to re-score with; a guard left at None is off (it only counts)."""

    max_steps: int | None = None
    repeat: int | None = None  # the repetition brake's threshold
    consecutive: bool = False  # the brake counts repeats in a row (threshold 3 unless given)
    max_errors: int | None = None
    token_budget: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "repeat", "max_errors", "token_budget"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be a whole number, got {value!r}")
        self.guard_set()  # the engine's guards say what they accept

    @classmethod
    def of_run(cls, guards: dict[str, Any] | None) -> GuardSettings:
        """The settings a run was recorded with (``run_start.guards``); what cannot be read
        is left off."""
        guards = guards if isinstance(guards, dict) else {}
        repeat = guards.get("repeat")
        repeat = repeat if isinstance(repeat, dict) else {}

        def number(value: Any, low: int) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= low else None

        consecutive = repeat.get("mode") == "consecutive"
        threshold = number(repeat.get("threshold"), 2)
        return cls(number(guards.get("max_steps"), 1), threshold if repeat.get("mode") == "any" or consecutive else None,
                   consecutive, number(guards.get("max_consecutive_errors"), 1), number(guards.get("token_budget"), 1))

    @property
    def repeat_on(self) -> bool:
        return self.repeat is not None or self.consecutive

    def guard_set(self) -> GuardSet:
        repetition = (RepetitionGuard("consecutive" if self.consecutive else "any", self.repeat)
                      if self.repeat_on else RepetitionGuard(active=False))
        return GuardSet.of(self.max_steps, [repetition, ErrorBudget(self.max_errors), TokenBudget(self.token_budget)])

    def to_dict(self) -> dict[str, Any]:
        """The same shape as ``run_start.guards``."""
        return self.guard_set().settings()

    def describe(self) -> str:
        """``repeat brake any ×2 · max 5 steps``; ``no guards`` when all are off."""
        parts = []
        if self.repeat_on:
            threshold = self.guard_set().repetition.threshold
            parts.append(f"repeat brake {'consecutive' if self.consecutive else 'any'} ×{threshold}")
        if self.max_steps is not None:
            parts.append(f"max {self.max_steps:,} steps")
        if self.max_errors is not None:
            parts.append(f"{_plural(self.max_errors, 'error')} in a row")
        if self.token_budget is not None:
            parts.append(f"{self.token_budget:,} tokens")
        return " · ".join(parts) or "no guards"


@dataclass(frozen=True)
class Stop:
    """Where the new guards would have stopped the run."""

    step: int
    guard: str  # one of events.GUARD_NAMES
    outcome: str  # the outcome the run would have had
    message: str
    before_action: bool  # the step's action would not have run (or its answer not been accepted)

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "guard": self.guard, "outcome": self.outcome, "message": self.message,
                "before_action": self.before_action}


@dataclass(frozen=True)
class Rescore:
    """One run under one set of guards."""

    settings: GuardSettings
    steps: int  # steps recorded
    tokens: int  # tokens recorded (0 when the run recorded no usage)
    judged: str  # correct, wrong, failed (ended without an answer) or ungraded
    stop: Stop | None  # the first trip, within the recorded steps
    effect: str  # one of EFFECTS
    steps_saved: int
    tokens_saved: int

    @property
    def changed(self) -> bool:
        return self.effect in STOPS

    def to_dict(self) -> dict[str, Any]:
        return {"effect": self.effect, "stop": None if self.stop is None else self.stop.to_dict(),
                "steps_saved": self.steps_saved, "tokens_saved": self.tokens_saved}

    def explain(self) -> str:
        """One sentence: where it would stop and what that means for the run."""
        if self.stop is None:
            if self.effect == "runs_on":
                return (f"these guards do not stop it within its {self.steps:,} recorded steps; it was stopped at "
                        f"step {self.steps:,}, so it would have gone on (what it would have done is unknown)")
            return f"these guards let it through: it ends as recorded, after {self.steps:,} steps"
        stop = self.stop
        where = f"would stop at step {stop.step:,} of {self.steps:,}"
        if self.effect == "same_stop":
            return f"{where}, where it ended anyway without an answer"
        when = " (the answer refused)" if stop.before_action and stop.step == self.steps else ""
        saved = f"saving {_plural(self.steps_saved, 'step')}"
        if self.tokens:
            saved += f" and {self.tokens_saved:,} of {self.tokens:,} tokens"
        return f"{where}{when}, {saved}: {EFFECT_WORDS[self.effect]}"


EFFECT_WORDS = {
    "good_stop": "a good stop (the run was wrong or failed)",
    "false_stop": "a false stop (the run was correct)",
    "ungraded_stop": "a stop of a run nothing judged",
    "same_stop": "stops where it ended anyway",
    "runs_on": "would run on past its recording",
    "let_through": "let through",
}


def judged(end: ev.RunEnd | None) -> str:
    """``correct`` or ``wrong`` (a grader's judgement), ``failed`` (ended without an answer,
    nothing judged), or ``ungraded`` (answered with no judgement, or never ended)."""
    verdict = Verdict.read(end)
    if verdict is not None and verdict.correct is not None:
        return "correct" if verdict.correct else "wrong"
    if end is not None and end.answer is None:
        return "failed"
    return "ungraded"


def signature(record: StepRecord) -> tuple[str, str] | None:
    """What the repetition guard compares for this step, and how a trip shows it, as the
    engine passes them (None for a step without an action: an answer repeats nothing)."""
    if record.tool is not None:
        return Action("", record.tool, record.args).signature(), shown_call(record.call or record.tool)
    if record.parse_error is not None:
        return unreadable_signature(record.output or record.parse_error)
    return None


class Fold:
    """One run's steps through one fresh ``GuardSet``, asked at the engine's points:
    ``decide`` once the output is known, then (for a step that acted) ``observed`` and
    ``step_done``. A step that ended the run without acting asks no more, as in the engine."""

    def __init__(self, settings: GuardSettings):
        self.settings = settings
        self.guards = settings.guard_set()
        self.stop: Stop | None = None
        self.tokens_at_stop = 0

    def add(self, record: StepRecord, tokens: int, used: int) -> None:
        """Fold step ``record``, which cost ``tokens`` (``used`` the running total after it)."""
        if self.stop is not None:
            return
        guards = self.guards
        if record.reflection is not None:  # a critique: tokens, and the step budget (as the engine)
            trip = guards.reflected(tokens)
            if trip is not None:
                self._stopped(record.step, trip, True, used)
                return
            trip = guards.step_done(record.step)
            if trip is not None:
                self._stopped(record.step, trip, False, used)
            return
        signed = signature(record)
        if len(record.calls) > 1:
            calls = [(Action("", call.tool, call.args).signature(), shown_call(call.call or call.tool))
                     for call in record.calls]
            trip = guards.decide_calls(tokens, calls)
        else:
            trip = guards.decide(tokens, *signed) if signed is not None else guards.decide(tokens, None)
        if trip is not None:
            self._stopped(record.step, trip, True, used)
            return
        if record.answer is not None or (signed is None and record.end is not None):
            return  # an answer, or the run's last turn without an action: nothing ran after it
        if len(record.calls) > 1:  # each answered call counts, in call order
            trip = guards.observed_calls([call.failed for call in record.calls
                                          if call.observation is not None or call.failed])
        elif record.observation is not None or record.is_error:  # a call never answered moves no streak
            trip = guards.observed(record.is_error)
        trip = trip or guards.step_done(record.step)
        if trip is not None:
            self._stopped(record.step, trip, False, used)

    def _stopped(self, step: int, trip: Trip, before: bool, used: int) -> None:
        self.stop = Stop(step, trip.guard, trip.outcome, trip.message, before)
        self.tokens_at_stop = used


def step_tokens(record: StepRecord, used: int) -> int:
    """What step ``record`` cost: the growth of the recorded running total (a source with
    only a run-wide figure puts it all on the last step), else the step's own figure."""
    counters = record.guards
    if counters is not None:
        total = counters.tokens[0] if isinstance(counters.tokens, list) and counters.tokens else None
        if isinstance(total, int) and not isinstance(total, bool) and total >= used:
            return total - used
    spent = record.step_tokens
    return spent if isinstance(spent, int) and not isinstance(spent, bool) and spent > 0 else 0


def _stopped_by_guard(last: StepRecord | None, end: ev.RunEnd | None) -> bool:
    if last is not None and last.tripped is not None:
        return True
    return end is not None and (end.guard is not None or end.outcome in STOPPED_OUTCOMES)


def _effect(fold: Fold, steps: int, last: StepRecord | None, end: ev.RunEnd | None, verdict: str) -> str:
    stop = fold.stop
    if stop is None:
        return "runs_on" if _stopped_by_guard(last, end) else "let_through"
    answered_there = last is not None and last.answer is not None
    if end is not None and stop.step == steps and not (stop.before_action and answered_there):
        return "same_stop"  # it stops there with no answer either way
    return {"correct": "false_stop", "wrong": "good_stop", "failed": "good_stop"}.get(verdict, "ungraded_stop")


Cancel = Callable[[], bool]


def rescore_records(records: Iterable[StepRecord], settings: Sequence[GuardSettings],
                    end: ev.RunEnd | Callable[[], ev.RunEnd | None] | None,
                    cancelled: Cancel | None = None) -> list[Rescore] | None:
    """Each of ``settings`` over the run's steps ``records`` (read once, in order), given its
    ``end`` (or a function giving it once the steps are read); None when ``cancelled()``
    said so part-way."""
    folds = [Fold(s) for s in settings]
    used = steps = 0
    last: StepRecord | None = None
    for record in records:
        if cancelled is not None and steps % CANCEL_EVERY == 0 and cancelled():
            return None
        spent = step_tokens(record, used)
        used += spent
        steps += 1
        last = record
        for fold in folds:
            fold.add(record, spent, used)
    if callable(end):
        end = end()
    verdict = judged(end)
    results = []
    for fold in folds:
        effect = _effect(fold, steps, last, end, verdict)
        changed = effect in STOPS and fold.stop is not None
        results.append(Rescore(fold.settings, steps, used, verdict, fold.stop, effect,
                               steps - fold.stop.step if changed and fold.stop is not None else 0,
                               used - fold.tokens_at_stop if changed else 0))
    return results


def run_records(run: Any) -> Iterator[StepRecord]:
    """Every recorded step of ``run`` (a ``RunView``), never asking a live run for more."""
    step = 1
    while step <= run.step_count:
        yield run.record(step)
        step += 1


def rescore_run(run: Any, settings: Sequence[GuardSettings], records: Iterable[StepRecord] | None = None,
                cancelled: Cancel | None = None) -> list[Rescore] | None:
    """``rescore_records`` over a ``RunView``'s steps (``records`` when the caller reads them)."""
    return rescore_records(run_records(run) if records is None else records, settings, lambda: run.end, cancelled)


# -- totals ---------------------------------------------------------------------------------

@dataclass
class Totals:
    """Sums over many runs under one set of guards, kept as they come (bounded memory)."""

    runs: int = 0
    effects: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(EFFECTS, 0))
    judged: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(("correct", "wrong", "failed", "ungraded"), 0))
    stopped_by: dict[str, Any] = field(default_factory=dict)  # guard -> runs it stopped (changed runs)
    steps: int = 0
    steps_saved: int = 0
    tokens: int = 0
    tokens_saved: int = 0
    runs_with_tokens: int = 0

    def add(self, result: Rescore) -> None:
        self.runs += 1
        self.effects[result.effect] += 1
        self.judged[result.judged] += 1
        if result.changed and result.stop is not None:
            self.stopped_by[result.stop.guard] = self.stopped_by.get(result.stop.guard, 0) + 1
        self.steps += result.steps
        self.steps_saved += result.steps_saved
        self.tokens += result.tokens
        self.tokens_saved += result.tokens_saved
        self.runs_with_tokens += 1 if result.tokens else 0

    @property
    def stopped(self) -> int:
        return sum(self.effects[effect] for effect in STOPS)

    def to_dict(self) -> dict[str, Any]:
        e = self.effects
        return {
            "runs": self.runs, "stopped": self.stopped, "good_stops": e["good_stop"], "false_stops": e["false_stop"],
            "ungraded_stops": e["ungraded_stop"], "same_stops": e["same_stop"], "runs_on": e["runs_on"],
            "let_through": e["let_through"],
            "correct": self.judged["correct"], "wrong": self.judged["wrong"], "failed": self.judged["failed"],
            "ungraded": self.judged["ungraded"], "stopped_by": dict(self.stopped_by),
            "steps": self.steps, "steps_saved": self.steps_saved,
            "tokens": self.tokens, "tokens_saved": self.tokens_saved, "runs_with_tokens": self.runs_with_tokens,
        }


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"
