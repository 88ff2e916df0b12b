"""What a search found: the step it went to and, once counted, every step it matches
(so ``.`` and ``,`` move through them without another scan, and the status line can say
"match 3 of 17")."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from agentdbg.debugger.find import Query


@dataclass
class Matches:
    """Every step ``text`` matches in ``run`` when it had ``step_count`` steps."""

    text: str
    run: Any
    step_count: int
    complete: bool
    steps: list[int]
    index: dict[int, int] = field(default_factory=dict)  # step -> its match number (1-based)

    def __post_init__(self) -> None:
        self.index = {step: number for number, step in enumerate(self.steps, 1)}

    def fits(self, text: str, run: Any) -> bool:
        """Still every match: same search, same run, and the run has not grown since."""
        return text == self.text and run is self.run and self.complete and run.step_count == self.step_count

    def next_from(self, cursor: int, forward: bool) -> int | None:
        """The next match after ``cursor`` (before it when not ``forward``), wrapping."""
        steps = self.steps
        if not steps:
            return None
        if forward:
            at = bisect.bisect_right(steps, cursor)
            return steps[at % len(steps)]
        at = bisect.bisect_left(steps, cursor) - 1
        return steps[at]  # -1 wraps to the last


@dataclass(frozen=True)
class SearchResult:
    step: int | None
    query: Query
    cancelled: bool
    matches: Matches | None
