"""Guards: the brakes that stop a run, each with a live counter the debugger shows.

A guard is configured once and asked at fixed points of every step; ``reset`` starts a
new run. ``counter`` is the pair [value, limit] written into each step's ``guards`` event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentdbg.engine import events as ev


@dataclass(frozen=True)
class Trip:
    guard: str  # one of events.GUARD_NAMES
    outcome: str  # the run's outcome status
    message: str


@dataclass
class StepBudget:
    """Stop after ``max_steps`` policy turns without a final answer (None: only count)."""

    max_steps: int | None
    name: str = "max_steps"
    allow_zero: bool = False  # the engine's loop runs no step on 0; a recorded run has no such case

    def __post_init__(self) -> None:
        least = 0 if self.allow_zero else 1
        if self.max_steps is not None and self.max_steps < least:
            raise ValueError(f"max_steps must be at least {least}, got {self.max_steps}")

    def check(self, step: int) -> Trip | None:
        if self.max_steps is not None and step >= self.max_steps:
            return Trip(self.name, "budget exhausted", f"step budget exhausted: {self.max_steps} steps used")
        return None


@dataclass
class RepetitionGuard:
    """The repetition brake. ``mode="any"`` stops the first time an earlier action comes
    back (the strict brake); ``mode="consecutive"`` stops when the same action is
    proposed ``threshold`` times in a row (default 3), for tools whose result changes
    between calls. ``active=False`` only counts (the debugger still shows repeats)."""

    mode: str = "any"
    threshold: int | None = None
    active: bool = True
    name: str = "repetition"
    count: int = field(default=0, repr=False)
    _seen: dict[str, Any] = field(default_factory=dict, repr=False)
    _last: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in ("any", "consecutive"):
            raise ValueError(f"repeat mode must be 'any' or 'consecutive', got {self.mode!r}")
        if self.threshold is None:
            self.threshold = 2 if self.mode == "any" else 3
        if self.threshold < 2:
            raise ValueError(f"repeat threshold must be at least 2, got {self.threshold}")

    def reset(self) -> None:
        self._seen, self._last, self.count = {}, None, 0

    def settings(self) -> dict[str, Any] | None:
        return {"mode": self.mode, "threshold": self.threshold} if self.active else None

    @property
    def counter(self) -> list[Any]:
        return [self.count, self.threshold if self.active else None]

    def no_action(self) -> None:
        """A turn without an action (an answer) repeats nothing and breaks a run of
        consecutive repeats."""
        self._last, self.count = None, 0

    def check(self, signature: str, shown: str) -> Trip | None:
        if self.mode == "any":
            self.count = self._seen.get(signature, 0) + 1
            self._seen[signature] = self.count
        else:
            self.count = self.count + 1 if signature == self._last else 1
            self._last = signature
        if self.active and self.threshold is not None and self.count >= self.threshold:
            how = "again" if self.mode == "any" else f"{self.count} times in a row"
            return Trip(self.name, "action repeated", f"action repeated {how}: {shown}")
        return None


@dataclass
class ErrorBudget:
    """Stop after ``limit`` error observations in a row (None: only count)."""

    limit: int | None
    name: str = "error_budget"
    streak: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"error budget must be at least 1, got {self.limit}")

    def reset(self) -> None:
        self.streak = 0

    @property
    def counter(self) -> list[Any]:
        return [self.streak, self.limit]

    def observe(self, is_error: bool) -> Trip | None:
        self.streak = self.streak + 1 if is_error else 0
        if self.limit is not None and self.streak >= self.limit:
            return Trip(self.name, "error budget exhausted", f"error budget exhausted: {self.streak} errors in a row")
        return None


@dataclass
class TokenBudget:
    """Stop when the running total of tokens (what the policy was shown plus what it wrote)
    exceeds ``limit`` (None: only count). The step that crosses the limit is counted; its
    action is not run and its answer is not accepted."""

    limit: int | None
    name: str = "token_budget"
    used: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"token budget must be at least 1, got {self.limit}")

    def reset(self) -> None:
        self.used = 0

    @property
    def counter(self) -> list[Any]:
        return [self.used, self.limit]

    def spend(self, tokens: int) -> Trip | None:
        self.used += tokens
        if self.limit is not None and self.used > self.limit:
            return Trip(self.name, "token budget exhausted", f"token budget exhausted: {self.used} > {self.limit} tokens")
        return None


Guard = RepetitionGuard | ErrorBudget | TokenBudget


def unreadable_signature(text: str) -> tuple[str, str]:
    """What the repetition guard compares for an output that could not be read as an
    action (its text, so the same malformed output again is a repeat), and how a trip
    shows it."""
    text = text.strip()
    shown = " ".join(text.split())
    return "\x01" + text, shown[:80] + ("…" if len(shown) > 80 else "")


def shown_call(call: str) -> str:
    """An action as a repetition trip shows it: on one line."""
    return " ".join(call.split())


@dataclass
class GuardSet:
    """One run's four guards, asked at the same points of every step by the engine, the
    recorder of users' own loops and the importers, so their counters agree:

    1. ``decide`` when the step's output is known: its tokens are spent and its action (or
       unreadable output) is compared with the earlier ones; an answer repeats nothing.
       A trip here means the action is not run and the answer not accepted.
    2. ``observed`` when its observation is in: the error streak;
    3. ``step_done`` after that: the step budget;
    4. ``counters`` for the step's ``guards`` event.
    """

    step_budget: StepBudget
    repetition: RepetitionGuard
    errors: ErrorBudget
    tokens: TokenBudget

    @classmethod
    def of(cls, max_steps: int | None, guards: Iterable[Guard] = (), allow_zero: bool = False) -> GuardSet:
        """The step budget and any of the other guards (those left out only count).
        ``allow_zero``: a budget of 0 steps is accepted (the engine's loop then runs none)."""
        chosen = cls(StepBudget(max_steps, allow_zero=allow_zero), RepetitionGuard(active=False), ErrorBudget(None),
                     TokenBudget(None))
        for guard in guards:
            if isinstance(guard, RepetitionGuard):
                chosen.repetition = guard
            elif isinstance(guard, ErrorBudget):
                chosen.errors = guard
            elif isinstance(guard, TokenBudget):
                chosen.tokens = guard
            else:
                raise TypeError(f"not a guard: {guard!r} (the step budget is max_steps=)")
        return chosen

    @classmethod
    def counting(cls, max_steps: int | None = None) -> GuardSet:
        """Guards that stop nothing and only count; ``max_steps`` is reported as given
        (a source's own budget), never enforced."""
        guards = cls.of(None)
        guards.step_budget.max_steps = max_steps
        return guards

    def reset(self) -> None:
        for guard in (self.repetition, self.errors, self.tokens):
            guard.reset()

    def settings(self) -> dict[str, Any]:
        """The guard settings a ``run_start`` event carries (the token estimator aside)."""
        return {
            "max_steps": self.step_budget.max_steps,
            "repeat": self.repetition.settings(),
            "max_consecutive_errors": self.errors.limit,
            "token_budget": self.tokens.limit,
        }

    def decide(self, tokens: int, signature: str | None, shown: str = "") -> Trip | None:
        """The step's output is known: spend its ``tokens`` and compare its action
        (``signature``, None for an answer) with the earlier ones. Both counters move
        every step, so each step's counters describe that step."""
        trip = self.tokens.spend(tokens)
        if signature is None:
            self.repetition.no_action()
            return trip
        repeated = self.repetition.check(signature, shown)
        return trip or repeated

    def decide_calls(self, tokens: int, calls: list[tuple[str, str]]) -> Trip | None:
        """``decide`` for a turn of several calls (``(signature, shown)`` each): the turn's
        tokens are spent once and every call is compared, in order, with the calls before
        it, this turn's included. A trip stops the whole turn: none of its calls runs. The
        counter reports the worst repeat of the turn (in the consecutive mode, the streak
        the last call ends)."""
        trip = self.tokens.spend(tokens)
        repeated, worst = None, 0
        for signature, shown in calls:
            found = self.repetition.check(signature, shown)
            repeated = repeated or found
            worst = max(worst, self.repetition.count)
        if self.repetition.mode == "any":
            self.repetition.count = worst
        return trip or repeated

    def reflected(self, tokens: int) -> Trip | None:
        """A reflection turn: it spends tokens and calls nothing, so the repeat and error
        counters are left as they were (a critique between two failures neither resets
        nor adds to a streak)."""
        return self.tokens.spend(tokens)

    def observed(self, is_error: bool) -> Trip | None:
        return self.errors.observe(is_error)

    def observed_calls(self, failed: list[bool]) -> Trip | None:
        """The observations of a turn's calls, in order: each failed call counts towards
        the error budget, each successful one ends the streak."""
        for is_error in failed:
            trip = self.errors.observe(is_error)
            if trip is not None:  # the streak stays where it tripped
                return trip
        return None

    def step_done(self, step: int) -> Trip | None:
        return self.step_budget.check(step)

    def counters(self, step: int, step_tokens: int) -> ev.GuardCounters:
        return ev.GuardCounters(
            step=step,
            steps=[step, self.step_budget.max_steps],
            repeats=self.repetition.counter,
            errors=self.errors.counter,
            tokens=self.tokens.counter,
            step_tokens=step_tokens,
        )
