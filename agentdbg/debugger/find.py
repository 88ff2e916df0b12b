"""What ``/`` looks for, and every step it matches.

The rule: text that starts with ``~`` or ``!`` (after spaces) is a filter expression, the
language of filter breakpoints (``~tool search & ~error``); anything else is a regular
expression over the step's transcript, smart case, looked for literally when it is not a
valid one. ``\\~`` at the start searches for a literal tilde. No UI here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentdbg import regex
from agentdbg.debugger import quick
from agentdbg.debugger.candidates import candidate_steps
from agentdbg.debugger.filters import Filter, compile_regex, parse_filter, transcript_text
from agentdbg.debugger.proofs import StepProofs
from agentdbg.model.runs import Advancing, RawSteps, StepBlocks

FILTER_PREFIXES = ("~", "!")
CANCEL_EVERY = 256
PROGRESS_EVERY = 4096  # steps between progress calls
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
        stripped = text.strip()
        if stripped.startswith(FILTER_PREFIXES):
            return cls(text, filter=parse_filter(stripped))
        if text.startswith("\\~"):
            text = text[1:]
        return cls(text, pattern=search_pattern(text))

    def record_test(self) -> Callable[[Any], bool]:
        """A test of one decoded step: does it match?"""
        if self.filter is not None:
            return self.filter.predicate()
        pattern = self.pattern
        if pattern is None:
            return lambda record: False
        return lambda record: pattern.found(transcript_text(record))

    def block_test(self, run: Any) -> Callable[[Any], set[int]] | None:
        """Over a trace file read a block at a time, the steps of a block that may match
        (the others certainly do not); None when the run is not read so, or when the
        query gives nothing to look for in the bytes."""
        if not isinstance(run, StepBlocks) or isinstance(run, Advancing):
            return None
        if self.filter is not None:
            return self.filter.block_test()
        pattern = self.pattern
        if pattern is None:
            return None
        return quick.regex_block_test(pattern.pattern, not pattern.flags & re.IGNORECASE)

    def step_test(self, run: Any) -> Callable[[int], bool]:
        """A test of one step number: does it match?"""
        matches = self.record_test()
        step_bytes = run.step_bytes if isinstance(run, RawSteps) else None
        may_match: quick.BytesTest | None = None
        if step_bytes is None:
            pass
        elif self.filter is not None:
            may_match = self.filter.bytes_test()
        elif self.pattern is not None:
            may_contain = quick.regex_bytes_test(self.pattern.pattern, not self.pattern.flags & re.IGNORECASE)
            may_match = None if may_contain is None else (lambda step, data: may_contain(data))

        def test(step: int) -> bool:
            if may_match is not None and step_bytes is not None:
                data = step_bytes(step)
                if data is not None and not may_match(step, data):
                    return False
            return matches(run.record(step))

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
              cancel: threading.Event | None = None, proofs: StepProofs | None = None,
              progress: Callable[[int], None] | None = None) -> int | None:
    """The next (or previous) matching step after ``origin``, wrapping round the run.
    None when nothing matches or ``cancel`` is set. ``proofs``: what earlier scans of the
    run proved of its steps' bytes (a debugger session's), lent and kept."""
    count = run.step_count
    origin = max(0, min(origin, count + 1))
    for first, last in _spans(origin, count, forward, wrap):
        for step in iter_matches(run, query, cancel, first, last, reverse=not forward, progress=progress,
                                 proofs=proofs):
            return step  # (None: cancelled)
    return None


def matching_steps(run: Any, query: Query, cancel: threading.Event | None = None,
                   limit: int = COUNT_LIMIT, proofs: StepProofs | None = None) -> list[int] | None:
    """Every matching step in order (at most ``limit``); None when cancelled."""
    found: list[int] = []
    for step in iter_matches(run, query, cancel, proofs=proofs):
        if step is None:
            return None
        found.append(step)
        if len(found) >= limit:
            break
    return found


def iter_matches(run: Any, query: Query, cancel: threading.Event | None = None, first: int = 1,
                 last: int | None = None, *, reverse: bool = False, progress: Callable[[int], None] | None = None,
                 proofs: StepProofs | None = None) -> Iterator[int | None]:
    """The steps ``first``..``last`` (default: those known now) that ``query`` matches, in
    order (from ``last`` down with ``reverse``); yields None and ends when ``cancel`` is
    set. Over a trace file a block of steps at a time, decoding only the steps its block
    test cannot rule out; else step by step, each step's bytes tested first where the run
    has them. A step that cannot be read matches nothing."""
    last = run.step_count if last is None else last
    may_match = query.block_test(run)
    if may_match is not None:
        matches = query.record_test()
        for step in candidate_steps(run, may_match, first, last, reverse=reverse, cancel=cancel,
                                    progress=progress, proofs=proofs):
            if step is None:
                yield None
                return
            if _matches(run, matches, step):
                yield step
        return
    test = query.step_test(run)
    order = range(last, first - 1, -1) if reverse else range(first, last + 1)
    for done, step in enumerate(order, 1):
        if done % CANCEL_EVERY == 0:
            if cancel is not None and cancel.is_set():
                yield None
                return
            if progress is not None and done % PROGRESS_EVERY == 0:
                progress(step)
        try:
            if test(step):
                yield step
        except (IndexError, ValueError, OSError):
            continue  # a damaged step matches nothing


def _spans(origin: int, count: int, forward: bool, wrap: bool) -> list[tuple[int, int]]:
    """The steps a search from ``origin`` looks at, as ranges in the order it looks (each
    read backwards when not ``forward``)."""
    if forward:
        spans = [(origin + 1, count)] + ([(1, min(origin, count))] if wrap else [])
    else:
        spans = [(1, min(origin, count + 1) - 1)] + ([(max(origin, 1), count)] if wrap else [])
    return [(first, last) for first, last in spans if first <= last]


def _matches(run: Any, matches: Callable[[Any], bool], step: int) -> bool:
    try:
        return matches(run.record(step))
    except (IndexError, ValueError, OSError):
        return False  # a damaged step matches nothing


def search_pattern(text: str) -> regex.Pattern | None:
    """Smart-case regex for a search; literal text when it is not a valid regex."""
    if not text:
        return None
    try:
        return compile_regex(text)
    except ValueError:
        return compile_regex(regex.escape(text))


def literal_reason(text: str) -> str | None:
    """Why ``search`` looks for ``text`` literally: what makes it an invalid regex (None
    when it is a valid one)."""
    try:
        compile_regex(text)
    except ValueError as exc:
        return str(exc)
    return None
