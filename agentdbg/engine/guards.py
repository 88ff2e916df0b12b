"""Guards: the brakes that stop a run, each with a live counter the debugger shows.

A guard is configured once and asked at fixed points of every step; ``reset`` starts a
new run. ``counter`` is the pair [value, limit] written into each step's ``guards`` event.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Trip:
    guard: str  # one of events.GUARD_NAMES
    outcome: str  # the run's outcome status
    message: str


@dataclass
class StepBudget:
    """Stop after ``max_steps`` policy turns without a final answer."""

    max_steps: int
    name: str = "max_steps"

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")

    def check(self, step: int) -> Trip | None:
        if step >= self.max_steps:
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
    _seen: dict = field(default_factory=dict, repr=False)
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

    def settings(self) -> dict | None:
        return {"mode": self.mode, "threshold": self.threshold} if self.active else None

    @property
    def counter(self) -> list:
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
        if self.active and self.count >= self.threshold:
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
    def counter(self) -> list:
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
    def counter(self) -> list:
        return [self.used, self.limit]

    def spend(self, tokens: int) -> Trip | None:
        self.used += tokens
        if self.limit is not None and self.used > self.limit:
            return Trip(self.name, "token budget exhausted", f"token budget exhausted: {self.used} > {self.limit} tokens")
        return None


Guard = RepetitionGuard | ErrorBudget | TokenBudget
