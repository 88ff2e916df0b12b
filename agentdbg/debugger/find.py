"""What ``/`` looks for, and every step it matches.

The rule: text that starts with ``~`` or ``!`` (after spaces) is a filter expression, the
language of filter breakpoints (``~tool search & ~error``); anything else is a regular
expression over the step's transcript, smart case, looked for literally when it is not a
valid one. ``\\~`` at the start searches for a literal tilde. No UI here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agentdbg import regex
from agentdbg.debugger import quick
from agentdbg.debugger.filters import Filter, parse_filter, transcript_text
from agentdbg.model.runs import RawSteps

FILTER_PREFIXES = ("~", "!")
CANCEL_EVERY = 256
COUNT_LIMIT = 1_000_000  # matching steps counted at most


@dataclass(frozen=True)
class Query:
    """A search: its text, and the filter or the pattern it was read as."""

    text: str
    filter: Filter | None = None
    pattern: regex.Pattern | None = None

    @property
    def is_filter(self) -> bool:
        return self.filter is not None

    @classmethod
    def parse(cls, text: str) -> Query:
        """Raises ValueError (with the filter language's message) for a bad filter."""
        from agentdbg.debugger.session import search_pattern

        stripped = text.strip()
        if stripped.startswith(FILTER_PREFIXES):
            return cls(text, filter=parse_filter(stripped))
        if text.startswith("\\~"):
            text = text[1:]
        return cls(text, pattern=search_pattern(text))

    def step_test(self, run: Any) -> Callable[[int], bool]:
        """A test of one step number: does it match?"""
        if self.filter is not None:
            flt = self.filter
            return lambda step: flt.matches(run.record(step))
        pattern = self.pattern
        if pattern is None:
            return lambda step: False
        step_bytes = run.step_bytes if isinstance(run, RawSteps) else None
        may_contain = (quick.regex_bytes_test(pattern.pattern, not pattern.flags & re.IGNORECASE)
                       if step_bytes is not None else None)

        def test(step: int) -> bool:
            if may_contain is not None and step_bytes is not None:
                data = step_bytes(step)
                if data is not None and not may_contain(data):
                    return False
            return pattern.found(transcript_text(run.record(step)))

        return test

    def spans(self, text: str, limit: int = 200) -> Iterator[tuple[int, int]]:
        """Where the pattern occurs in ``text`` (at most ``limit`` places): for
        highlighting. A filter highlights nothing."""
        pattern = self.pattern
        if pattern is None:
            return
        offset = 0
        for _ in range(limit):
            match = pattern.search(text[offset:])
            if match is None:
                return
            start, end = offset + match.start(), offset + match.end()
            if end > start:
                yield start, end
            offset = max(end, start + 1)
            if offset > len(text):
                return


def find_step(run: Any, query: Query, origin: int, forward: bool = True, wrap: bool = True,
              cancel: threading.Event | None = None) -> int | None:
    """The next (or previous) matching step after ``origin``, wrapping round the run."""
    count = run.step_count
    if count == 0:
        return None
    origin = max(0, min(origin, count + 1))
    if forward:
        order = list(range(origin + 1, count + 1))
        order_wrap = range(1, min(origin, count) + 1)
    else:
        order = list(range(min(origin, count + 1) - 1, 0, -1))
        order_wrap = range(count, max(origin, 1) - 1, -1)
    test = query.step_test(run)
    for done, step in enumerate(_chain(order, order_wrap if wrap else range(0)), 1):
        if done % CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
            return None
        try:
            if test(step):
                return int(step)
        except (IndexError, ValueError, OSError):
            continue  # a damaged step matches nothing
    return None


def matching_steps(run: Any, query: Query, cancel: threading.Event | None = None,
                   limit: int = COUNT_LIMIT) -> list[int] | None:
    """Every matching step in order (at most ``limit``); None when cancelled."""
    test = query.step_test(run)
    found: list[int] = []
    for step in range(1, run.step_count + 1):
        if step % CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
            return None
        try:
            if test(step):
                found.append(step)
        except (IndexError, ValueError, OSError):
            continue
        if len(found) >= limit:
            break
    return found


def _chain(*orders: Iterable[int]) -> Iterator[int]:
    for order in orders:
        yield from order
