"""Byte-level tests on one step's lines as an agentdbg trace holds them.

A continue or a search over a large trace file reads every step; decoding each one's JSON
costs far more than the breakpoint checks. These tests look at the raw bytes instead and
answer only "this step certainly does not match" (False) or "it may" (True): a step they
cannot rule out is decoded and checked properly, so they never change a result, only
its speed. They rely on what the trace writer guarantees (compact JSON, "type" first, one
event per line) and treat anything else as "may match".
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentdbg.debugger import prefilter
from agentdbg.engine import events as ev
from agentdbg.model import state
from agentdbg.trace import scan
from agentdbg.trace.format import line_prefix

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - a platform without its wheels: no relaxed regex
    _re2 = None

# Events that never stop a continue by themselves; observations and guard counters are
# looked into (an error observation, a repeat counter of 2 or more).
QUIET_LINES = tuple(line_prefix(kind) for kind in (
    "step", "thought", "action", "observation", "guards", "memory_recall", "memory_update", "checkpoint",
    "operation"))
_OBSERVATION, _GUARDS = line_prefix("observation"), line_prefix("guards")
_NO_REPEAT = (b"0,", b"1,", b"0]", b"1]")  # the repeat counter's first digits: below 2

BytesTest = Callable[[int, bytes], bool]  # (step, data) -> may match


def is_quiet(data: bytes) -> bool:
    """True when the step certainly has no error, parse error, repeated action, guard
    trip, answer, run end or unmapped record: no automatic break can stop there."""
    for line in data.split(b"\n"):
        if not line or line == b"\r":
            continue
        # A second "type" key could turn a quiet-looking line into another event.
        if not line.startswith(QUIET_LINES) or line.find(b'"type"', 9) != -1:
            return False
        if line.startswith(_OBSERVATION) and b'"error"' in line:
            return False
        if line.startswith(_GUARDS):
            at = line.find(b'"repeats":[')
            if at != -1 and line[at + 11:at + 13] not in _NO_REPEAT:
                return False
    return True


def may_be_eventful(step: int, data: bytes) -> bool:
    return not is_quiet(data)


def name_spellings(name: str) -> tuple[bytes, ...]:
    """The ways a name can be spelled inside a JSON line."""
    plain = json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ascii_only = json.dumps(name).encode("ascii")
    return tuple({plain, ascii_only, plain.replace(b"/", b"\\/"), ascii_only.replace(b"/", b"\\/")})


def may_name(names: list[str], or_shown: bool = False) -> BytesTest:
    """May the step mention one of these names (e.g. call one of these tools)? With
    ``or_shown``, also a tool whose name is not shown as it is written (a control sequence
    or an invisible character in it: it may match a name as shown)."""
    spellings = tuple(s for name in names for s in name_spellings(name))
    if or_shown:
        return lambda step, data: any(s in data for s in spellings) or _names_an_odd_tool(data)
    return lambda step, data: any(s in data for s in spellings)


def _names_an_odd_tool(data: bytes) -> bool:
    """Does a "tool" field in these lines hold an escape or a non-ASCII character?"""
    at = data.find(b'"tool":"')
    while at != -1:
        end = data.find(b'"', at + 8)
        name = data[at + 8:end] if end != -1 else data[at + 8:]
        if b"\\" in name or not name.isascii():
            return True
        at = data.find(b'"tool":"', at + 8)
    return False


# --- the same tests over a whole block of steps (agentdbg.trace.scan.Block) -------------

BlockTest = Callable[[Any], set[int]]  # (block) -> the steps of the block that may match
_ODD_TOOL = re.compile(rb'"tool":"[^"\\\x80-\xff]*[\\\x80-\xff]')


@dataclass(frozen=True)
class _Prefilter:
    """How to rule out steps for one regex: ``searches`` over the raw bytes, and which
    steps they cannot speak for. ``words``: searches for a literal set's words. JSON
    escapes only quotes, backslashes and control characters, so a word of letters, digits
    and underscores in a text is byte for byte in the line, unless a ``\\u`` escape spells
    it; under case folding a non-ASCII character may match one (the Kelvin sign is a
    ``k``); with ``invalid_too`` (a word a text made up when shown may hold, see
    ``word_is_plain``), a step not of the searchable grammar may show it too
    (``Block.unusual``). Else one relaxed regex, trusted in a step whose texts are its
    strings as written (``Block.not_verbatim``; with ``grammar``, also every text it shows
    one of its strings), searched for from a character every match holds where there is
    one (``suffix``). ``confirm``: the relaxed regex beside the words, for blocks where
    many steps hold a word (``catalog\\[4969\\]``: most steps hold "catalog"): there the
    relaxed regex rules out steps instead, so that they are not all decoded."""

    searches: tuple[Any, ...]  # any of them finding something: the step may match
    words: bool
    fold: bool = False
    invalid_too: bool = False
    grammar: bool = False
    confirm: Any = None
    suffix: Any = None  # the relaxed regex from a character on (``prefilter.literal_suffix``)

    def block(self, block: Any) -> set[int]:
        if not self.words:
            found = self._relaxed(block, self.searches[0])
            found |= block.not_verbatim(self.grammar)
            return found
        most = DECODE_FEW if self.confirm is not None else None
        found = set()
        for search in self.searches:
            found |= block.steps_matching(search, None if most is None else most - len(found))
            if most is not None and len(found) > most:
                # Many steps hold a word: those the relaxed regex finds and those it cannot
                # speak for instead (a superset of the steps holding a word that it finds
                # or cannot speak for), one pass over the block rather than thousands of
                # steps decoded.
                found = self._relaxed(block, self.confirm) | block.not_verbatim(self.grammar)
                break
        found |= block.unusual(self.invalid_too, self.fold)
        return found

    def _relaxed(self, block: Any, relaxed: Any) -> set[int]:
        """The steps whose bytes the relaxed regex matches: those the suffix finds, each
        tried whole, unless the suffix finds too many (then the relaxed regex, over the block)."""
        if self.suffix is not None:
            hits: set[int] = block.steps_matching(self.suffix, DECODE_FEW)
            if len(hits) <= DECODE_FEW:
                return {step for step in hits if block.holds(relaxed, step)}
        found: set[int] = block.steps_matching(relaxed)
        return found

    def step(self, data: bytes) -> bool:
        if any(search(data, 0, len(data)) is not None for search in self.searches):
            if not self.words or self.confirm is None or self.confirm(data, 0, len(data)) is not None:
                return True
            return not scan.is_verbatim(data, self.grammar)
        if self.words:
            return (not data.isascii() or b"\\u" in data or b"\x7f" in data
                    or (self.invalid_too and not scan.is_verbatim(data)))
        return not scan.is_verbatim(data, self.grammar)


FEW_WORDS = 4  # a literal set of at most this many words is searched one word at a time
DECODE_FEW = 128  # steps of a block holding a word decoded, rather than the relaxed regex tried


@functools.lru_cache(maxsize=128)
def _prefilter(pattern: str, case_sensitive: bool, made_up: bool) -> _Prefilter | None:
    """The best way to rule out steps for ``pattern`` (None: none, decode every step): a
    useful literal set (``prefilter.literal_set``), with the relaxed regex to confirm it;
    else the relaxed regex (RE2 only), else a weak literal set."""
    parsed = prefilter.parse(pattern)
    if parsed is None:
        return None
    try:
        fold = not case_sensitive or prefilter.folds_case(parsed)
    except RecursionError:  # (nested deeper than Python's parser itself goes)
        return None
    words = prefilter.literal_set(pattern, fold)
    relaxed = prefilter.relaxed(pattern, fold) if _re2 is not None else None
    relaxed_search = _compile_bytes(relaxed.pattern, relaxed.fold) if relaxed is not None else None
    if relaxed_search is not None and _in_every_step(relaxed_search):
        if not prefilter.useful(words):
            return None  # (it would keep every step: decode them straight away)
        relaxed_search = None
    suffix = prefilter.literal_suffix(pattern, fold) if relaxed_search is not None else None
    suffix_search = _compile_bytes(suffix.pattern, suffix.fold) if suffix is not None else None
    if suffix_search is not None and _in_every_step(suffix_search):
        suffix_search = None
    if relaxed_search is not None and not prefilter.useful(words):
        return _Prefilter((relaxed_search,), words=False, grammar=made_up, suffix=suffix_search)
    if not words:
        return None
    # A few words: one search each (RE2 skips to each one's first byte, several times
    # faster than an alternation, which reads every byte).
    spelled = [re.escape(word.encode("ascii")) for word in sorted(_fewer_words(words), key=len, reverse=True)]
    groups = [[word] for word in spelled] if len(spelled) <= FEW_WORDS else [spelled]
    searches = tuple(_compile_bytes(b"|".join(group), fold) for group in groups)
    if any(search is None or _in_every_step(search) for search in searches):
        return None
    invalid_too = made_up and not all(word_is_plain(word) for word in words)
    return _Prefilter(searches, words=True, fold=fold, invalid_too=invalid_too, grammar=made_up,
                      confirm=relaxed_search, suffix=suffix_search)


# Bytes every step holds (its step line, with the one digit its number surely has): a
# search that finds something in them keeps every step, better decoded straight away.
_EVERY_STEP = b'{"type":"step","step":1}\n'


def _in_every_step(search: Any) -> bool:
    return search(_EVERY_STEP, 0, len(_EVERY_STEP)) is not None


def _fewer_words(words: frozenset[str], shortest: int = 3) -> set[str]:
    """The same requirement with fewer searches: a word holding another goes (the other
    finds it), and words sharing a beginning of ``shortest`` or more letters become that
    beginning (``color``, ``colour``: ``colo``)."""
    kept = set(words)
    merged = True
    while merged and len(kept) > 1:
        merged = False
        for a, b in itertools.combinations(sorted(kept), 2):
            common = os.path.commonprefix([a, b])
            if a in b or b in a or len(common) >= shortest:
                kept -= {a, b}
                kept.add(a if a in b else b if b in a else common)
                merged = True
                break
    return kept


def _compile_bytes(pattern: bytes, fold: bool) -> Any:
    """A search(data, pos, endpos) over raw bytes: RE2 (LATIN1); Python's engine for a plain
    alternation of words when RE2 is missing (nothing to backtrack into)."""
    if _re2 is None:
        if any(ch in pattern for ch in b"*+?{["):
            return None
        return re.compile(pattern, re.IGNORECASE if fold else 0).search
    options = _re2.Options()
    options.encoding = _re2.Options.Encoding.LATIN1
    options.case_sensitive = not fold
    options.log_errors = False
    options.max_mem = 64 << 20
    try:
        return _re2.compile(pattern, options).search
    except _re2.error:  # too large for RE2: no prefilter
        return None


def regex_block_test(pattern: str, case_sensitive: bool, made_up: bool = True) -> BlockTest | None:
    """For a regex over a step's transcript (``made_up``: or a field that may show what the
    step's lines do not hold, see ``filters._Regex``; else a field copied from one event):
    the steps of a block whose bytes may match it. Never leaves out a step that matches:
    a step its bytes cannot speak for is always in. None when the regex gives nothing to
    look for (every step is decoded)."""
    found = _prefilter(pattern, bool(case_sensitive), made_up)
    return None if found is None else found.block


def regex_bytes_test(pattern: str, case_sensitive: bool, made_up: bool = True) -> Callable[[bytes], bool] | None:
    """``regex_block_test`` for one step's bytes: False only when the step cannot match."""
    found = _prefilter(pattern, bool(case_sensitive), made_up)
    return None if found is None else found.step


_NUMBER_WORD = re.compile(r"[0-9eE]*|inf|nan|infinity", re.IGNORECASE)


def _note_words() -> str | None:
    """Every word a step's shown text can hold that is not copied from its lines: the
    words of the texts made up when shown (``state``: an approval, a replay, a pause...)
    and of the note of a raw record made from an invalid or unknown event (``events``: the
    validation's messages, field and type names), and how Python shows values (``True``,
    ``None``); lowercased, in one string. Read from those modules' string literals (their
    docstrings left out); None when their source cannot be read."""
    words = {"True", "False", "None", "NoneType", "str", "int", "float", "bool", "list", "dict", "tuple"}
    for module in (ev, state):
        if module.__file__ is None:
            return None
        try:
            tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            return None
        docstrings = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    docstrings.add(id(body[0].value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                words.add(node.target.id)  # a field: validation messages name it
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                words.update(re.findall(r"[A-Za-z0-9_]+", node.value))
    return " ".join(sorted(word.lower() for word in words))


_NOTE_WORDS: str | None = None


def word_is_plain(word: str) -> bool:
    """Can ``word`` be in a step's transcript only as its bytes hold it, even where an
    invalid event becomes a raw record? Not when a validation message could say it, nor
    for digits (``1e5`` is shown as ``100000.0``)."""
    global _NOTE_WORDS
    if _NOTE_WORDS is None:
        _NOTE_WORDS = _note_words() or ""
    if not _NOTE_WORDS or _NUMBER_WORD.fullmatch(word):
        return False
    return word.lower() not in _NOTE_WORDS


def name_block_test(names: list[str], or_shown: bool = False) -> BlockTest:
    """``may_name`` over a block."""
    spellings = tuple(s for name in names for s in name_spellings(name))

    def test(block: Any) -> set[int]:
        found: set[int] = set()
        for spelling in spellings:
            found |= block.steps_holding(spelling)
        if or_shown:
            found |= block.steps_matching(_ODD_TOOL.search)
        return found

    return test


def per_step_block_test(test: BytesTest) -> BlockTest:
    """A step test run on each step of a block (for tests with no block form)."""

    def run(block: Any) -> set[int]:
        if not block.data:
            return set(range(block.first, block.last + 1))
        data = block.data
        found: set[int] = set()
        for step in range(block.first, block.last + 1):
            start, stop = block.span(step)
            if test(step, data[start:stop]):
                found.add(step)
        return found

    return run


def eventful_block_test(block: Any) -> set[int]:
    """The steps of a block that may stop an automatic break (the scan's candidates)."""
    return set(block.candidates)
