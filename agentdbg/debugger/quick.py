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
import importlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentdbg.engine import events as ev
from agentdbg.model import state
from agentdbg.trace.format import line_prefix

# Events that never stop a continue by themselves; observations and guard counters are
# looked into (an error observation, a repeat counter of 2 or more).
QUIET_LINES = tuple(line_prefix(kind) for kind in (
    "step", "thought", "action", "observation", "guards", "memory_recall", "memory_update", "checkpoint",
    "operation"))
_OBSERVATION, _GUARDS = line_prefix("observation"), line_prefix("guards")
_NO_REPEAT = (b"0,", b"1,", b"0]", b"1]")  # the repeat counter's first digits: below 2
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_]+")

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


def may_contain_word(pattern: str, case_sensitive: bool, made_up: bool = True) -> Callable[[bytes], bool] | None:
    """For a regex that is one plain ASCII word: may a step's text contain it? None for
    any other regex (it needs the decoded text). JSON escapes only quotes, backslashes and
    control characters, so a word of letters, digits and underscores in a text appears
    byte for byte in the line. A ``\\u`` escape or any non-ASCII byte means "may": Unicode
    case folding (the Kelvin sign matches k) and the ``repr`` of unusual characters in a
    call written without its text (``\\u200b``) could otherwise hide a match. With
    ``made_up`` (a text that can hold what a step shows without its lines holding it: the
    transcript, a call, arguments), a word such a text may hold (``word_is_plain``) gets
    no test."""
    if not _PLAIN_WORD.fullmatch(pattern) or (made_up and not word_is_plain(pattern)):
        return None  # (a word a raw record's note or a made-up text may hold: decode)
    word = pattern.encode("ascii")
    if case_sensitive:
        return lambda data: word in data or not data.isascii() or b"\\u" in data or b"\x7f" in data
    lowered = word.lower()
    return lambda data: lowered in data.lower() or not data.isascii() or b"\\u" in data or b"\x7f" in data


# --- the same tests over a whole block of steps (agentdbg.trace.scan.Block) -------------

BlockTest = Callable[[Any], set[int]]  # (block) -> the steps of the block that may match
# Python's own regex parser, to read a regex's structure (its required words).
_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ODD_TOOL = re.compile(rb'"tool":"[^"\\\x80-\xff]*[\\\x80-\xff]')


def required_words(pattern: str) -> list[str]:
    """Runs of ASCII letters, digits and underscores that every match of ``pattern`` holds
    (``not.there``: ``not`` and ``there``); none when the pattern cannot be read here (its
    syntax is read with Python's parser: a pattern it refuses gives none)."""
    try:
        parsed = _parser.parse(pattern)
    except Exception:  # RE2 syntax Python does not read: no words, no prefilter
        return []
    words: list[str] = []
    _collect_words(list(parsed), words)
    return words


def _collect_words(items: list[Any], words: list[str]) -> None:
    run: list[str] = []
    for op, value in items:
        if op is _constants.LITERAL and chr(value) in _WORD_CHARS:
            run.append(chr(value))
            continue
        if run:
            words.append("".join(run))
            run = []
        if op is _constants.SUBPATTERN:
            _collect_words(list(value[-1]), words)
        elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT) and value[0] >= 1:
            _collect_words(list(value[2]), words)
    if run:
        words.append("".join(run))


def word_block_test(pattern: str, case_sensitive: bool, made_up: bool = True) -> BlockTest | None:
    """For a regex holding a word (``required_words``): the steps of a block whose text may
    match it. A step's transcript is its lines' texts, so the word is in its bytes, except
    in a step whose bytes cannot show that (``Block.unusual``: a ``\\u`` escape, non-ASCII
    text, an event whose text is made up when shown); those may match. None for a regex
    without such a word (every step is decoded)."""
    words = required_words(pattern)
    if not words:
        return None
    text = max(words, key=len)
    word = text.encode("ascii")
    fold = not case_sensitive or "(?" in pattern  # (?i) inside: look case-blind
    if fold:
        word = word.lower()
    invalid_too = made_up and not word_is_plain(text)
    return lambda block: block.steps_holding(word, lowered=fold) | block.unusual(invalid_too, fold)


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
