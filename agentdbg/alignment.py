"""Two sequences aligned item by item, as diff(1) aligns lines: which items pair up
(*equal*, or *changed* when the rest of what they say differs), and which are only in A or
only in B.

Each item is given as two digests (``Summaries``): one for what aligns it, one for the
rest. Items are aligned by the first with ``difflib.SequenceMatcher`` over what is left once
the common start and end are set aside. The result is kept as segments, not rows, plus the
rows that differ: a million equal items are one segment, and a row is found by bisection.
``agentdbg.diff`` reduces runs' steps to such digests.
"""

from __future__ import annotations

import difflib
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

EQUAL, CHANGED, ONLY_A, ONLY_B = "equal", "changed", "only in A", "only in B"
KINDS = (EQUAL, CHANGED, ONLY_A, ONLY_B)
# Past this many items on each side, SequenceMatcher's worst case (runs that loop on one
# action) would be quadratic: its "popular item" heuristic is turned on to stay fast.
EXACT_ALIGN_STEPS = 20_000


@dataclass
class Summaries:
    """A sequence reduced for aligning: per item, a digest of what aligns it (a step's
    action) and one of the rest (what else it says)."""

    keys: array = field(default_factory=lambda: array("q"))
    contents: array = field(default_factory=lambda: array("q"))

    def add(self, key: int, content: int) -> None:
        self.keys.append(key)
        self.contents.append(content)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class Segment:
    """``length`` rows: steps ``a``.. and ``b``.. side by side (``kind`` "pair"), or steps of
    one side only (``"a"`` or ``"b"``, the other side's number being where it would go)."""

    kind: str
    a: int  # first step of A in it (1-based); for a "b" segment, the A step after the gap
    b: int
    length: int


@dataclass(frozen=True)
class Row:
    """One aligned row: a step of A, of B, or both (None: a gap on that side)."""

    index: int
    kind: str  # one of KINDS
    a: int | None
    b: int | None
    a_at: int = 0  # the step whose state each side shows here: its own, or before the gap
    b_at: int = 0


class Alignment:
    """The rows of two aligned runs, kept as segments plus the rows that differ."""

    def __init__(self, segments: list[Segment], changed: array, steps_a: int, steps_b: int):
        self.segments = segments
        self.steps_a, self.steps_b = steps_a, steps_b
        self._starts: list[int] = []
        row = 0
        for segment in segments:
            self._starts.append(row)
            row += segment.length
        self.row_count = row
        self._changed = changed  # rows of "pair" segments whose steps differ, ascending
        self._changed_set = set(changed) if len(changed) < 1_000_000 else None
        # Where each stretch of differing rows starts: what "next difference" visits.
        self.hunks = array("Q")
        last = -2
        for index in self.different_rows():
            if index != last + 1:
                self.hunks.append(index)
            last = index

    def different_rows(self) -> Iterator[int]:
        """Every row that is not equal, in order."""
        changed = iter(self._changed)
        pending = next(changed, None)
        for start, segment in zip(self._starts, self.segments, strict=True):
            end = start + segment.length
            if segment.kind == "pair":
                while pending is not None and pending < end:
                    yield pending
                    pending = next(changed, None)
            else:
                yield from range(start, end)

    def _is_changed(self, index: int) -> bool:
        if self._changed_set is not None:
            return index in self._changed_set
        at = bisect_right(self._changed, index) - 1
        return at >= 0 and self._changed[at] == index

    def row(self, index: int) -> Row:
        if not 0 <= index < self.row_count:
            raise IndexError(f"no row {index}: the alignment has {self.row_count}")
        at = bisect_right(self._starts, index) - 1
        segment = self.segments[at]
        offset = index - self._starts[at]
        if segment.kind == "a":
            return Row(index, ONLY_A, segment.a + offset, None, segment.a + offset, segment.b - 1)
        if segment.kind == "b":
            return Row(index, ONLY_B, None, segment.b + offset, segment.a - 1, segment.b + offset)
        a, b = segment.a + offset, segment.b + offset
        return Row(index, CHANGED if self._is_changed(index) else EQUAL, a, b, a, b)

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[Row]:
        stop = self.row_count if stop is None else min(stop, self.row_count)
        for index in range(max(start, 0), stop):
            yield self.row(index)

    @property
    def identical(self) -> bool:
        return not self.hunks

    @property
    def first_difference(self) -> int | None:
        return self.hunks[0] if self.hunks else None

    def next_difference(self, index: int, forward: bool = True) -> int | None:
        """The first row of the next (or previous) stretch of differing rows."""
        hunks = self.hunks
        at = bisect_right(hunks, index)
        if forward:
            return hunks[at] if at < len(hunks) else None
        at -= 1
        if at >= 0 and hunks[at] == index:
            at -= 1
        return hunks[at] if at >= 0 else None

    def row_of_step(self, side: str, step: int) -> int | None:
        """The row showing step ``step`` of side ``"a"`` or ``"b"``."""
        for start, segment in zip(self._starts, self.segments, strict=True):
            if segment.kind in ("pair", side):
                first = segment.a if side == "a" else segment.b
                if first <= step < first + segment.length:
                    return start + step - first
        return None

    def counts(self) -> dict[str, int]:
        only_a = sum(s.length for s in self.segments if s.kind == "a")
        only_b = sum(s.length for s in self.segments if s.kind == "b")
        changed = len(self._changed)
        return {EQUAL: self.row_count - only_a - only_b - changed, CHANGED: changed, ONLY_A: only_a, ONLY_B: only_b}


def align(a: Summaries, b: Summaries, shared: int = 0) -> Alignment:
    """Align two runs' steps by action; see the module's notes. ``shared``: the runs'
    first steps known equal already (``a`` and ``b`` summarise the steps after them)."""
    keys_a, keys_b = a.keys, b.keys
    n, m = len(keys_a), len(keys_b)
    head = 0
    while head < n and head < m and keys_a[head] == keys_b[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and keys_a[n - 1 - tail] == keys_b[m - 1 - tail]:
        tail += 1
    opcodes: list[tuple[str, int, int, int, int]] = []
    if head:
        opcodes.append(("equal", 0, head, 0, head))
    middle_a, middle_b = keys_a[head:n - tail], keys_b[head:m - tail]
    if middle_a or middle_b:
        matcher = difflib.SequenceMatcher(None, middle_a.tolist(), middle_b.tolist(),
                                          autojunk=max(len(middle_a), len(middle_b)) > EXACT_ALIGN_STEPS)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            opcodes.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        opcodes.append(("equal", n - tail, n, m - tail, m))

    segments: list[Segment] = []
    changed = array("Q")
    row = 0

    def pair(i: int, j: int, length: int) -> None:
        nonlocal row
        if not length:
            return
        last = segments[-1] if segments else None
        if last is not None and last.kind == "pair" and last.a + last.length == i + 1 and last.b + last.length == j + 1:
            segments[-1] = Segment("pair", last.a, last.b, last.length + length)
        else:
            segments.append(Segment("pair", i + 1, j + 1, length))
        contents_a, contents_b = a.contents, b.contents
        for k in range(length):
            if contents_a[i - shared + k] != contents_b[j - shared + k]:
                changed.append(row + k)
        row += length

    def one_side(kind: str, i: int, j: int, length: int) -> None:
        nonlocal row
        if length:
            segments.append(Segment(kind, i + 1, j + 1, length))
            row += length

    if shared:  # known equal without digests: one pair segment, no changed rows
        segments.append(Segment("pair", 1, 1, shared))
        row = shared
    for tag, i1, i2, j1, j2 in opcodes:
        i1, i2, j1, j2 = i1 + shared, i2 + shared, j1 + shared, j2 + shared
        if tag == "equal":
            pair(i1, j1, i2 - i1)
        elif tag == "delete":
            one_side("a", i1, j1, i2 - i1)
        elif tag == "insert":
            one_side("b", i1, j1, j2 - j1)
        else:  # replace: steps in the same place that did something else are "changed"
            both = min(i2 - i1, j2 - j1)
            pair(i1, j1, both)
            one_side("a", i1 + both, j1 + both, i2 - i1 - both)
            one_side("b", i1 + both, j1 + both, j2 - j1 - both)
    return Alignment(segments, changed, n + shared, m + shared)
