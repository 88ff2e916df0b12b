"""Whole-block byte scans over a run's steps: which steps can matter, without decoding.

A full scan (``check``, ``stats`` without checkpoints, a continue, a search) used to read
and test a million steps one by one. Most steps are *plain*: written the way agentdbg
writes them, holding only a step line, thoughts, at most one action, observations that
are not errors, guard counters whose repeat count is below 2, memory events and
checkpoint lines. Such a step cannot fail a check, stop an automatic break or change a
counter other than its tool's call count.

One regular expression recognises a run of plain steps over a whole block of the file
(a few MiB at a time, RE2: linear, about 400 MB/s, and it lets other threads run); where it
stops, the step it stopped in is a *candidate*, and the scan resumes at the next step. The
caller decodes (or classifies, ``tally``) only the candidates. The pattern accepts only
lines that are valid events (the same grammar as ``agentdbg.trace.tally``), so a damaged
line is always a candidate.

``strict`` scans (``check``, whose result lists damaged lines) also prove what the
grammar cannot: that every line of a step carries the step's number, and that the block
is valid UTF-8; a step that fails either is a candidate too, to be decoded the ordinary
way so that it reports its problems exactly as a full decode would.
"""

from __future__ import annotations

import functools
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from agentdbg.model.state import StepRecord, Tally
from agentdbg.trace import tally, workers
from agentdbg.trace.format import CHECKPOINT_PREFIX
from agentdbg.trace.tally import (
    _COUNTER,
    _FLAT_OBJECT,
    _INT,
    _RESULT,
    _SIGNED,
    _STR,
    _TEXTS,
    FAST_STEP_BYTES,
    _optional,
)

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - a platform without its wheels: Python's engine (tested)
    _re2 = None

BLOCK_BYTES = 4 * 1024 * 1024  # a scan reads this much of the file at a time
# The lines of a plain step, after '{"type":"' (see the module docstring).
_QUIET = [
    rb'thought","step":' + _INT + rb',"text":' + _STR,
    rb'observation","step":' + _INT + rb',"text":' + _STR + rb'(?:,"error":false)?' + _optional(b"id", _STR),
    rb'guards","step":' + _INT + _optional(b"steps", _COUNTER)
    + rb'(?:,"repeats":\[[01],(?:' + _INT + rb"|null)\])?"
    + _optional(b"errors", _COUNTER) + _optional(b"tokens", _COUNTER) + _optional(b"step_tokens", _SIGNED),
    rb'memory_recall","step":' + _INT + rb',"query":' + _STR
    + _optional(b"results", rb"\[(?:" + _RESULT + rb"(?:," + _RESULT + rb")*)?\]"),
    rb'memory_update","step":' + _INT + _optional(b"added", _TEXTS) + _optional(b"evicted", _TEXTS)
    + _optional(b"summary", rb"(?:" + _STR + rb"|null)") + _optional(b"stored", _TEXTS),
]
_ACTION = (rb'action","step":' + _INT + rb',"tool":' + _STR + rb',"args":(?:' + _STR + rb"|" + _FLAT_OBJECT
           + rb")" + _optional(b"call", _STR) + _optional(b"id", _STR))
_OTHER_LINE = rb'\{"type":"(?:(?:' + rb"|".join(_QUIET) + rb')\}\n|checkpoint",[^\n]*\n)'
_PLAIN_STEP = (rb'\{"type":"step","step":' + _INT + rb"\}\n(?:" + _OTHER_LINE + rb")*"
               + rb'(?:\{"type":"' + _ACTION + rb"\}\n(?:" + _OTHER_LINE + rb")*)?")
PLAIN_STEPS = rb"(?:" + _PLAIN_STEP + rb")*"
# Every line of a step carries the number its step line gives (checkpoints: the step they
# follow, the same number). Python's engine, for the back-reference; linear all the same.
# (Possessive repeats: nothing to backtrack into, so nothing is saved for it; `.` skips a
# line faster than `[^\n]`, the same bytes.)
_SAME_NUMBER = re.compile(rb'(?:\{"type":"step","step":([0-9]+)\}\n(?:\{"type":"[a-z_]+","step":\1[,}].*+\n)*+)*+')


# Steps whose transcript is their lines' texts as written (no approval, replay, operation,
# pause or raw record, whose texts are made up when shown; an action's arguments as text,
# not an object shown as a Python value): a word in their transcript is in their bytes,
# unless a \u escape spells it.
_SEARCHABLE_STEPS = (rb'(?:\{"type":"step","step":' + _INT + rb'\}\n(?:\{"type":"(?:(?:'
                     + rb"|".join(re.sub(rb"\(\?P<\w+>", b"(?:", kind).replace(b"|" + _FLAT_OBJECT, b"")
                                  for kind in tally._KINDS)
                     + rb')\}\n|checkpoint",[^\n]*\n))*)*')

# Searchable steps whose every shown text is one of their JSON strings as written: each
# action carries its call (else it is shown made up from its tool and arguments).
_NONEMPTY_STR = rb'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))' + _STR[1:]
_VERBATIM_STEPS = _SEARCHABLE_STEPS.replace(_optional(b"call", _STR), b',"call":' + _NONEMPTY_STR)
_verbatim_end: Callable[[bytes, int, int], int] | None = None  # compiled when first needed
# In a plain step, the one line whose shown text may be made up: an action without its
# call (shown as tool[args]) or with arguments as an object (shown as JSON).
_MADE_UP_ACTION = (rb'\{"type":"action","step":' + _INT + rb',"tool":' + _STR + rb',"args":(?:\{|' + _STR
                   + rb'(?:,"call":"")?' + _optional(b"id", _STR) + rb"\}\n)")
_made_up_action_search: Search | None = None


def _match_end(pattern: re.Pattern[bytes], data: bytes, start: int, stop: int) -> int:
    match = pattern.match(data, start, stop)
    return start if match is None else match.end()


def _compile_prefix(pattern: bytes) -> Callable[[bytes, int, int], int]:
    """``end(data, start, stop)``: where the longest match of ``pattern`` from ``start`` ends."""
    if _re2 is None:
        compiled = re.compile(pattern)
        return lambda data, start, stop: _match_end(compiled, data, start, stop)
    options = _re2.Options()
    options.longest_match = True  # the longest run of steps, not the first
    options.max_mem = 64 << 20  # room for the DFA of a long alternation
    options.encoding = _re2.Options.Encoding.LATIN1  # bytes as they are (UTF-8 is checked apart)
    plain = _re2.compile(pattern, options)
    raw = getattr(plain, "_regexp", None)
    anchor = getattr(getattr(_re2, "_Anchor", None), "ANCHOR_START", None)
    if raw is None or anchor is None:  # another version of the binding: its public API
        return lambda data, start, stop: plain.match(data, start, stop).end()
    match = raw.Match  # the binding's own call, without its generator per match
    return lambda data, start, stop: max(start, match(anchor, data, start, stop)[0][1])


plain_end = _compile_prefix(PLAIN_STEPS)
_searchable_end: Callable[[bytes, int, int], int] | None = None  # compiled when first needed
Search = Callable[[bytes, int, int], Any]  # a compiled pattern's search(data, pos, endpos)


def _compile_search(pattern: bytes) -> Search:
    if _re2 is None:
        return re.compile(pattern).search
    options = _re2.Options()
    options.encoding = _re2.Options.Encoding.LATIN1
    search: Search = _re2.compile(pattern, options).search
    return search


_non_ascii_search = _compile_search(rb"[^\x00-\x7f]")
_escape_search: Search | None = _compile_search(rb"\\u") if _re2 is not None else None  # RE2 skips to each backslash
_odd_escape_search = _compile_search(rb"\\[^n]")  # an escape of anything but a newline


@dataclass
class Block:
    """Whole steps read from the file: step ``first + i`` is ``data[starts[i] - base:
    starts[i + 1] - base]`` (``starts`` has one more entry, the end)."""

    first: int
    base: int
    data: bytes
    starts: Sequence[int]
    strict: bool = False
    fold: bool = False  # fold the steps into counters with the classification (``folds``)
    _candidates: list[int] | None = None
    _folds: list[tally.Part | int] | None = None
    _suspect: set[int] = field(default_factory=set)
    _unusual: dict[tuple[bool, bool], set[int]] | None = None
    _lowered: bytes | None = None
    _not_verbatim: dict[bool, set[int]] = field(default_factory=dict)

    @property
    def candidates(self) -> list[int]:
        """The steps not proven plain, in order (see ``classify``)."""
        if self._candidates is None:
            classify(self)
        assert self._candidates is not None
        return self._candidates

    @property
    def suspect(self) -> set[int]:
        """Candidates to decode the ordinary way (too large, unreadable, a line cut off;
        in a strict scan also a step number or UTF-8 that the grammar cannot prove)."""
        if self._candidates is None:
            classify(self)
        return self._suspect

    @property
    def last(self) -> int:
        return self.first + len(self.starts) - 2

    def step_at(self, offset: int) -> int:
        """The step whose bytes hold ``data[offset]``."""
        return self.first + bisect_right(self.starts, offset + self.base) - 1

    def unusual(self, invalid_too: bool = True, folded: bool = True) -> set[int]:
        """Steps whose transcript may hold a word their bytes do not, for a word that none
        of the texts made up when shown (an approval, a replay, an operation, a pause, a
        call shown as a Python value: ``quick.word_is_plain``) can hold by itself: a
        character spelled with a \\u escape or shown escaped (DEL), non-ASCII text when
        ``folded`` (Unicode case folding matches ASCII letters to others). With
        ``invalid_too``, also every step not of the searchable grammar
        (``_SEARCHABLE_STEPS``): an invalid or unknown event is a raw record whose note
        says what is wrong in words of its own (or every step not verbatim, when that is
        known already: ``not_verbatim``, a superset)."""
        key = (invalid_too, folded)
        if self._unusual is None:
            self._unusual = {}
        cached = self._unusual.get(key)
        if cached is not None:
            return cached
        data, stop = self.data, len(self.data)
        if not data:
            found = set(range(self.first, self.last + 1))
        else:
            found = set(self._suspect)  # (too large, cut off)
            if _escape_search is not None:
                found |= self.steps_matching(_escape_search)
            elif b"\\u" in data:
                found |= self.steps_holding(b"\\u")
            if b"\x7f" in data:
                found |= self.steps_holding(b"\x7f")
            if folded and not data.isascii():
                found |= self.steps_matching(_non_ascii_search)
            if invalid_too and True in self._not_verbatim:
                # (proven already: a step not of the searchable grammar is not verbatim either)
                found |= self._not_verbatim[True]
            elif invalid_too:
                global _searchable_end
                if _searchable_end is None:
                    _searchable_end = _compile_prefix(_SEARCHABLE_STEPS)
                searchable_end = _searchable_end
                found |= {self.first + i for i in _failures(self.starts, self.base, stop,
                                                            lambda at: searchable_end(data, at, stop))}
        self._unusual[key] = found
        return found

    def not_verbatim(self, grammar: bool = True) -> set[int]:
        """Steps a text of which may differ from its bytes otherwise than by a newline
        written ``\\n``: an escape of anything else, DEL or a non-ASCII byte in them, too
        large or cut off; with ``grammar``, also every step whose shown texts are not all
        its JSON strings as written (``_VERBATIM_STEPS``: an invalid event's note, an
        approval, a call made up from its tool and arguments). In any other step, each
        text is its string's bytes with ``\\n`` for each newline."""
        cached = self._not_verbatim.get(grammar)
        if cached is not None:
            return cached
        data = self.data
        if not data:
            found = set(range(self.first, self.last + 1))
        else:
            global _verbatim_end
            found = set(self._suspect)
            if b"\\" in data:
                found |= self.steps_matching(_odd_escape_search)
            if b"\x7f" in data:
                found |= self.steps_holding(b"\x7f")
            if not data.isascii():
                found |= self.steps_matching(_non_ascii_search)
            if grammar:
                if _verbatim_end is None:
                    _verbatim_end = _compile_prefix(_VERBATIM_STEPS)
                found |= self._not_shown_verbatim(_verbatim_end)
        self._not_verbatim[grammar] = found
        return found

    def proven(self) -> dict[bool, set[int]]:
        """What ``not_verbatim`` has found in this block so far, by its ``grammar``."""
        return dict(self._not_verbatim)

    def prove(self, grammar: bool, steps: set[int]) -> None:
        """Give ``not_verbatim(grammar)`` its answer, found by an earlier scan of the same steps."""
        self._not_verbatim[grammar] = steps

    def _not_shown_verbatim(self, verbatim_end: Callable[[bytes, int, int], int]) -> set[int]:
        """The steps ``_VERBATIM_STEPS`` does not take. Once the block is classified (in a
        worker process, during a forward scan), only its candidates are matched against
        it: a plain step shows every text as written but a made-up action's."""
        data, stop = self.data, len(self.data)
        if self._candidates is None:
            return {self.first + i for i in _failures(self.starts, self.base, stop,
                                                      lambda at: verbatim_end(data, at, stop))}
        global _made_up_action_search
        if _made_up_action_search is None:
            _made_up_action_search = _compile_search(_MADE_UP_ACTION)
        found = self.steps_matching(_made_up_action_search)
        for step in self._candidates:
            start, end = self.span(step)
            if verbatim_end(data, start, end) < end:
                found.add(step)
        return found

    def steps_matching(self, search: Search, most: int | None = None) -> set[int]:
        """Steps where ``search(data, pos, endpos)`` (a compiled pattern's ``search``) finds
        something outside checkpoint lines (never part of a step's record); each step is
        looked at once. With ``most``, the first ``most + 1`` steps at most (more than
        ``most``: the caller had rather know no more)."""
        found: set[int] = set()
        stop = len(self.data)
        at = 0
        while at < stop and (most is None or len(found) <= most):
            where = self._found(search, at, stop)
            if where < 0:
                break
            step = self.step_at(where)
            found.add(step)
            at = self.starts[step - self.first + 1] - self.base
        return found

    def holds(self, search: Search, step: int) -> bool:
        """Does ``search`` find something in the step's bytes (outside checkpoint lines)?"""
        start, stop = self.span(step)
        return self._found(search, start, stop) >= 0

    def _found(self, search: Search, at: int, stop: int) -> int:
        """Where ``search`` first finds something in ``data[at:stop]`` outside checkpoint lines; -1: nowhere."""
        data = self.data
        while at < stop:
            match = search(data, at, stop)
            if match is None:
                return -1
            where: int = match.start()
            if not data.startswith(CHECKPOINT_PREFIX, data.rfind(b"\n", 0, where) + 1):
                return where
            line_end = data.find(b"\n", where)
            at = stop if line_end < 0 else line_end + 1
        return -1

    def plain_stretches(self) -> Iterator[tuple[int, int, int, int]]:
        """The runs of plain steps between the candidates, as ``(first, last, start, stop)``
        (steps and their bytes as ``data`` offsets)."""
        number = self.first
        for candidate in self.candidates + [self.last + 1]:
            if candidate > number:
                start, _ = self.span(number)
                _, stop = self.span(candidate - 1)
                yield number, candidate - 1, start, stop
            number = candidate + 1

    def folds(self) -> list[tally.Part | int]:
        """The block's steps for counters, in order: what folding the steps the step pattern
        takes adds (``tally.Part``, one for each stretch of them) and the number of each
        step to decode between them. Made with the classification when ``fold``, in a
        worker process where there is one."""
        if self._folds is None:
            self._folds = _folded(self)
        return self._folds

    def span(self, step: int) -> tuple[int, int]:
        """The step's bytes as ``data`` offsets."""
        i = step - self.first
        return self.starts[i] - self.base, self.starts[i + 1] - self.base

    def steps_holding(self, needle: bytes, lowered: bool = False) -> set[int]:
        """Steps whose bytes hold ``needle`` (with ``lowered``, an ASCII-lowercase needle
        in the bytes as they would be ASCII-lowercased)."""
        search = _literal_search(needle, lowered)
        if search is not None:
            return self.steps_matching(search)
        found = set()
        data = self.data
        if lowered:
            if self._lowered is None:
                self._lowered = data.lower()
            data = self._lowered
        stop = len(data)
        at = data.find(needle)
        while at != -1:
            step = self.step_at(at)
            found.add(step)
            next_start = self.starts[step - self.first + 1] - self.base
            at = data.find(needle, next_start) if next_start < stop else -1
        return found


def is_verbatim(data: bytes, grammar: bool = True) -> bool:
    """``Block.not_verbatim`` for one step's bytes: True when its texts are certainly its
    strings as written, newlines written ``\\n`` (checkpoint lines are looked at too: an
    escape there only makes the answer "maybe not")."""
    if not data.endswith(b"\n") or not data.isascii() or b"\x7f" in data:
        return False
    if b"\\" in data and _odd_escape_search(data, 0, len(data)) is not None:
        return False
    if not grammar:
        return True
    global _verbatim_end
    if _verbatim_end is None:
        _verbatim_end = _compile_prefix(_VERBATIM_STEPS)
    return _verbatim_end(data, 0, len(data)) == len(data)


@functools.lru_cache(maxsize=64)
def _literal_search(needle: bytes, folded: bool) -> Search | None:
    """RE2's search for these bytes (ASCII letters in either case with ``folded``): it
    skips to the needle's rarest byte, much faster than ``bytes.find`` over a block."""
    if _re2 is None:
        return None
    options = _re2.Options()
    options.encoding = _re2.Options.Encoding.LATIN1
    options.case_sensitive = not folded
    search: Search = _re2.compile(re.escape(needle), options).search
    return search


def _first_in(starts: Sequence[int], cursor: int, stop: int, base: int) -> tuple[int, int]:
    """Index of the step whose bytes hold ``cursor`` (block offsets), and where the next begins."""
    i = bisect_right(starts, cursor + base) - 1
    return i, starts[i + 1] - base if i + 1 < len(starts) else stop


def _failures(starts: Sequence[int], base: int, stop: int, prefix_end: Callable[[int], int]) -> list[int]:
    """Indexes of the steps where a prefix test fails, resuming at the next step each time."""
    failed = []
    cursor = 0
    while cursor < stop:
        end = prefix_end(cursor)
        if end >= stop:
            break
        i, cursor = _first_in(starts, end, stop, base)
        failed.append(i)
    return failed


def _utf8_failures(data: bytes, starts: Sequence[int], base: int) -> list[int]:
    if data.isascii():
        return []
    failed = []
    view = memoryview(data)
    cursor = 0
    while cursor < len(data):
        try:
            str(view[cursor:], "utf-8")
            break
        except UnicodeDecodeError as exc:
            i, cursor = _first_in(starts, cursor + exc.start, len(data), base)
            failed.append(i)
    return failed


def classify(block: Block) -> None:
    """Find the block's candidates: the steps the plain pattern does not take, and its
    suspects (for a strict scan, also the steps failing the step-number or UTF-8 proof)."""
    data, starts, base = block.data, block.starts, block.base
    stop = len(data)
    found = {block.first + i for i in _failures(starts, base, stop, lambda at: plain_end(data, at, stop))}
    if block.strict:
        bad = set(_failures(starts, base, stop, lambda at: _match_end(_SAME_NUMBER, data, at, stop)))
        bad.update(_utf8_failures(data, starts, base))
        block._suspect |= {block.first + i for i in bad}
    found |= block._suspect
    block._candidates = sorted(found)


def _larger_than(starts: Sequence[int], size: int) -> list[int]:
    """Indexes of the steps of more than ``size`` bytes (step i is ``starts[i]`` to
    ``starts[i + 1]``): a jump to the furthest start within ``size`` at a time, so a few
    MiB of small steps cost a few dozen bisections, not one subtraction per step."""
    found = []
    i, last = 0, len(starts) - 1
    while i < last:
        j = bisect_right(starts, starts[i] + size, i + 1, last + 1) - 1
        if j == i:  # (every step from i to j is within size: none of them is larger)
            found.append(i)
            j += 1
        i = j
    return found


def _unreadable(block: Block) -> set[int]:
    """Steps to decode the ordinary way whatever their bytes: too large to be taken whole
    (the reader's limits apply), or a last line without its newline."""
    found = {block.first + i for i in _larger_than(block.starts, FAST_STEP_BYTES)}
    if block.data and not block.data.endswith(b"\n"):
        found.add(block.last)
    return found


def blocks(starts: Sequence[int], end: int, first: int, pread: Callable[[int, int], bytes],
           strict: bool = False, reverse: bool = False, block_bytes: int | None = None,
           fold: bool = False, file_at: workers.FileAt | None = None, ahead: bool = False) -> Iterator[Block]:
    """The steps ``first, first + 1, ...`` (step ``first + i`` begins at ``starts[i]``, the
    last ends at ``end``) a block at a time, each classified when its candidates are
    asked for; from the last block back with ``reverse``. A step larger than a block is a
    block of its own with no data, a candidate. With ``fold``, each block's ``folds`` come
    with its classification. ``ahead`` (implied by ``fold``): the caller reads every
    block's candidates, so a big forward scan has them found ahead, in worker processes
    where there are some. ``file_at``: the file ``pread`` reads, for those processes to
    read blocks themselves."""
    block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
    count = len(starts)
    bounds = array("q", starts)  # (offsets as machine integers: a million cost a copy, not a million objects)
    bounds.append(end)
    if not reverse:
        spans = []
        i = 0
        while i < count:
            j = max(bisect_right(bounds, bounds[i] + block_bytes, i + 1, count + 1) - 1, i + 1)
            spans.append((i, j))
            i = j
        made = (_block(bounds, i, j, first, pread, strict, block_bytes, fold) for i, j in spans)
        if (ahead or fold) and count and end - bounds[0] > workers.PARALLEL_BYTES and len(spans) > 1:
            pool = workers.pool()
            if pool is not None:
                yield from _classified_in(pool, made, file_at)
                return
        yield from made
    else:
        j = count
        while j > 0:
            i = min(bisect_left(bounds, bounds[j] - block_bytes, 0, j), j - 1)
            yield _block(bounds, i, j, first, pread, strict, block_bytes, fold)
            j = i


Findings = tuple[list[int], set[int], list[tally.Part | int] | None]
_EDGE = 64  # bytes from each end of a block a worker read itself, compared with the caller's


def _classify_there(at: workers.FileAt, first: int, base: int, size: int, starts: Sequence[int], strict: bool,
                    fold: bool) -> tuple[bytes, Findings] | None:
    """``classify`` in a worker process, reading the block itself: its findings (and the
    steps folded, with ``fold``), after the edges of what it read, for the caller
    to compare with its own. None when the file cannot be read here."""
    data = workers.read_there(at, size, base)
    if data is None:
        return None
    block = Block(first, base, data, starts, strict, fold)
    block._suspect = _unreadable(block)
    classify(block)
    assert block._candidates is not None
    return _edges(data), (block._candidates, block._suspect, block.folds() if fold else None)


def _edges(data: bytes) -> bytes:
    return data[:_EDGE] + data[-_EDGE:]


def _classify_apart(block: Block) -> tuple[None, Findings]:
    """``classify`` in a worker process, the block sent to it (its file cannot be read there)."""
    classify(block)
    assert block._candidates is not None
    return None, (block._candidates, block._suspect, block.folds() if block.fold else None)


Pending = tuple[Block, "Future[Any] | None"]


def _classified_in(pool: Any, made: Iterator[Block], file_at: workers.FileAt | None = None) -> Iterator[Block]:
    """The blocks, in order, each classified in ``pool`` while the caller works on the
    ones before it (a few in flight: memory stays a few blocks whatever the file's size).
    With ``file_at``, the workers read the blocks themselves; only their findings come back."""
    pending: deque[Pending] = deque()
    try:
        for block in made:
            pending.append((block, None))  # (a huge step or a shrunk file is classified already)
            if block._candidates is None:
                pending[-1] = (block, _submit(pool, block, file_at))
            while len(pending) > workers.IN_FLIGHT or (pending and pending[0][1] is None):
                yield _settled(*pending[0])
                pending.popleft()
        while pending:
            yield _settled(*pending[0])
            pending.popleft()
    except BrokenProcessPool:  # a worker died (killed, out of memory): the rest here
        workers.lost()
        while pending:
            block, future = pending.popleft()
            if future is not None:
                future.cancel()
                block._candidates = None  # classified when asked, as in a scan without workers
            yield block
        yield from made
    finally:
        for _, future in pending:
            if future is not None:
                future.cancel()


def _submit(pool: Any, block: Block, file_at: workers.FileAt | None) -> Future[Any]:
    if file_at is None:
        return pool.submit(_classify_apart, block)  # type: ignore[no-any-return]
    return pool.submit(_classify_there, file_at, block.first, block.base,  # type: ignore[no-any-return]
                       len(block.data), block.starts, block.strict, block.fold)


def _settled(block: Block, future: Future[Any] | None) -> Block:
    if future is None:
        return block
    try:
        result = future.result()
    except BrokenProcessPool:
        raise
    except Exception:  # (a worker's own failure: classified here instead)
        result = None
    if result is None or (result[0] is not None and result[0] != _edges(block.data)):
        classify(block)  # here: the worker could not read the file, or read other bytes
    else:
        block._candidates, block._suspect, block._folds = result[1]
    return block


def _block(bounds: Sequence[int], i: int, j: int, first: int, pread: Callable[[int, int], bytes], strict: bool,
           block_bytes: int, fold: bool = False) -> Block:
    base, stop = bounds[i], bounds[j]
    steps = bounds[i:j + 1]
    if stop - base > block_bytes and j == i + 1:  # one huge step: not read here
        return Block(first + i, base, b"", steps, strict, _candidates=[first + i], _suspect={first + i})
    data = pread(stop - base, base)
    if len(data) < stop - base:  # the file shrank: let the ordinary way report it
        numbers = list(range(first + i, first + j))
        return Block(first + i, base, b"", steps, strict, _candidates=numbers, _suspect=set(numbers))
    block = Block(first + i, base, data, steps, strict, fold)
    block._suspect = _unreadable(block)
    return block


def eventful_records(run: Any) -> Iterator[tuple[StepRecord | tally.Sketch, Callable[[], StepRecord] | None]]:
    """Every step of a trace file's ``run`` (``step_blocks``) that may hold an error, a
    repeat, a guard trip, an answer, an end, an approval or a damaged line, in order, as
    ``(record, exact)``: ``exact`` is None when ``record`` is the step decoded, else
    ``record`` is a ``tally.Sketch`` and ``exact()`` decodes the step. The steps left out
    are plain (see the module docstring): decoding them would report nothing and meet no
    condition. Steps are read as the index finds them."""
    for block in indexed_blocks(run, strict=True):
        for number in block.candidates:
            sketched = None
            if number not in block.suspect:
                start, stop = block.span(number)
                sketched = tally.sketch(number, block.data, start, stop)
            if sketched is None:
                yield run.record(number), None
            else:
                yield sketched, functools.partial(run.record, number)


def indexed_blocks(run: Any, first: int = 1, strict: bool = False) -> Iterator[Block]:
    """``run.step_blocks`` from ``first`` to the run's last step, each step read once the
    index knows where it ends (while the index is still running, as it goes)."""
    while True:
        complete = run.complete
        count = run.step_count
        last = count if complete else count - 1  # the newest step's end is not known yet
        if last >= first:
            yield from run.step_blocks(first, last, strict=strict, ahead=True)
            first = last + 1
        if complete:
            return
        run.wait_for(first + 1, 0.05)
        if not run.complete and run.step_count <= count and getattr(run, "live", False):
            return  # a followed run caught up with its writer: what is written is read


def fold_tally(run: Any, base: Tally, first: int, last: int) -> Tally:
    """``base`` (the counters after step ``first - 1``) with steps ``first``..``last`` of a
    trace file's ``run`` folded in: a block's steps the step pattern takes folded together
    (``Block.folds``), the others decoded one by one (``tally.Folder``). The same figures
    as decoding every step."""
    folder = tally.Folder(base, run.record)
    for block in run.step_blocks(first, last, fold=True):
        for item in block.folds():
            if isinstance(item, int):
                folder.decoded(item)
            else:
                folder.merge(item)
    return folder.finish()


def _folded(block: Block) -> list[tally.Part | int]:
    data = block.data
    folds: list[tally.Part | int] = []
    part: tally.PartFolder | None = None
    stretches = block.plain_stretches()
    stretch = next(stretches, None)
    for candidate in block.candidates + [block.last + 1]:
        if stretch is not None and stretch[1] < candidate:  # the plain steps before it
            plain_first, plain_last, start, stop = stretch
            part = part or tally.PartFolder(plain_first - 1)
            part.plain(plain_last, data, start, stop, block.step_at)
            stretch = next(stretches, None)
        if candidate > block.last:
            break
        match = None if candidate in block.suspect else tally.step_match(data, *block.span(candidate))
        if match is not None:
            part = part or tally.PartFolder(candidate - 1)
            part.matched(candidate, match)
            continue
        if part is not None:
            folds.append(part.part())
            part = None
        folds.append(candidate)
    if part is not None:
        folds.append(part.part())
    return folds
