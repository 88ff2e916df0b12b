"""What a regex's matches must hold, read from the regex alone: for scans that look at a
trace file's raw bytes before decoding anything (``agentdbg.debugger.quick``).

Two answers, each a necessary condition on a text the regex matches:

* ``literal_set``: words (runs of ASCII letters, digits and underscores) one of which
  every match holds, as ripgrep's literal extraction finds them: ``colou?r|hue`` gives
  {color, colour, hue}, ``[Ee]rror`` {Error, error}. Such a word is in a step's bytes
  exactly as in its text (JSON escapes no word character; the newline that joins a step's
  texts is no word character either).
* ``relaxed``: a byte regex that matches somewhere in a step's bytes whenever the regex
  matches its text, for a step whose texts are its JSON strings as written (ASCII, no
  made-up text, no escape but ``\\n``: the caller checks). Anchors and word boundaries
  are dropped (a superset); the rest is kept as it is, except where a match may run
  through a newline (the one that joins two texts, or one written ``\\n``): in the bytes
  what is on either side of it is apart, so what the match holds before its first
  newline (or after its last) stands for it (``x\\s+y`` looks for ``x``).

Both read the regex with Python's own parser (RE2's syntax is nearly Python's); a regex
it reads differently from RE2 (``[[:alpha:]]``, ``x{,3}``) or refuses gets no answer.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from typing import Any

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

MAX_WORDS = 64  # a literal set larger than this is cut back to a weaker one
MAX_CLASS = 10  # characters of a class expanded into a literal set
MIN_USEFUL = 2  # a literal set whose shortest word is shorter is not worth it: relax instead
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IGNORECASE, _DOTALL = _c.SRE_FLAG_IGNORECASE, _c.SRE_FLAG_DOTALL
# RE2 syntax that Python's parser reads as something else: no answer for it.
_READ_OTHERWISE = ("[:", "{,")


class _GiveUp(Exception):
    """A construct this module cannot translate soundly."""


def parse(pattern: str) -> Any | None:
    """Python's parse of ``pattern`` (None when it refuses it or may read it otherwise than RE2)."""
    if any(text in pattern for text in _READ_OTHERWISE):
        return None
    try:
        return _parser.parse(pattern)
    except Exception:  # RE2 syntax Python does not read (\pL, \x{e9}, \Q...\E)
        return None


def folds_case(parsed: Any) -> bool:
    """Is any part of the parsed pattern case-insensitive (``(?i)``, ``(?i:...)``)?"""
    if parsed.state.flags & _IGNORECASE:
        return True
    return any(value[1] & _IGNORECASE for op, value in _walk(list(parsed)) if op is _c.SUBPATTERN)


def _walk(items: list[Any]) -> Any:
    for op, value in items:
        yield op, value
        if op is _c.SUBPATTERN:
            yield from _walk(list(value[-1]))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            yield from _walk(list(value[2]))
        elif op is _c.BRANCH:
            for branch in value[1]:
                yield from _walk(list(branch))


# --- literal sets -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Lits:
    """What a piece of a pattern tells: ``exact``, every string it matches (when they are
    few and all word characters), and ``required``, words one of which each match holds."""

    exact: frozenset[str] | None
    required: frozenset[str] | None


def literal_set(pattern: str, fold: bool) -> frozenset[str] | None:
    """Words one of which every match of ``pattern`` holds (lowercase with ``fold``: look
    for them case-blind); None when there is no such set (``a|.``, ``[a-z]+``) or the
    pattern cannot be read here."""
    parsed = parse(pattern)
    if parsed is None:
        return None
    try:
        lits = _lits_seq(list(parsed), fold)
    except (_GiveUp, RecursionError):
        return None
    if lits.exact is not None and "" not in lits.exact:
        return lits.exact
    return lits.required


def useful(words: frozenset[str] | None) -> bool:
    """Is a literal set worth searching for rather than a relaxed regex (no one-letter word)?"""
    return bool(words) and min(map(len, words)) >= MIN_USEFUL  # type: ignore[arg-type]


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """The more selective of two literal sets: longer shortest word, then fewer words."""
    if not a:
        return b or None
    if not b:
        return a
    return max((a, b), key=lambda words: (min(map(len, words)), -len(words)))


def _exact_usable(exact: frozenset[str] | None) -> frozenset[str] | None:
    return exact if exact and "" not in exact else None


def _lits_seq(items: list[Any], fold: bool) -> _Lits:
    """A concatenation: runs of exact pieces multiply out (cut when too many), the best
    run or inner requirement wins."""
    best: frozenset[str] | None = None
    run: frozenset[str] | None = frozenset({""})
    whole = True  # every piece exact, none cut: the run is all the sequence matches
    for op, value in items:
        piece = _lits_one(op, value, fold)
        if piece.exact is None:
            best = _better(best, _better(_exact_usable(run), piece.required))
            run, whole = None, False
        elif run is None:
            run = piece.exact
        elif len(run) * len(piece.exact) <= MAX_WORDS:
            run = frozenset(a + b for a, b in itertools.product(run, piece.exact))
        else:  # too many: what the run holds so far, and a new run
            best = _better(best, _exact_usable(run))
            run, whole = piece.exact, False
    if whole:
        return _Lits(run, _exact_usable(run))
    return _Lits(None, _better(best, _exact_usable(run)))


def _lits_one(op: Any, value: Any, fold: bool) -> _Lits:
    if op is _c.LITERAL:
        ch = chr(value)
        if ch in _WORD:
            return _Lits(frozenset({ch.lower() if fold else ch}), None)
        return _Lits(None, None)
    if op is _c.AT:
        return _Lits(frozenset({""}), None)  # matches nothing: adds nothing to a word
    if op is _c.IN:
        chars = _class_chars(value)
        if chars is None or not chars <= _WORD:
            return _Lits(None, None)
        if fold:
            chars = frozenset(ch.lower() for ch in chars)
        if not chars or len(chars) > MAX_CLASS:
            return _Lits(None, None)
        return _Lits(chars, None)
    if op is _c.SUBPATTERN:
        return _lits_seq(list(value[-1]), fold)
    if op is _c.BRANCH:
        branches = [_lits_seq(list(branch), fold) for branch in value[1]]
        exacts = [b.exact for b in branches if b.exact is not None]
        if len(exacts) == len(branches):
            exact = frozenset().union(*exacts)
            if len(exact) <= MAX_WORDS:
                return _Lits(exact, _exact_usable(exact))
        sets = [words for words in (_exact_usable(b.exact) or b.required for b in branches) if words]
        if len(sets) < len(branches):
            return _Lits(None, None)  # a branch without a word: no set
        union = frozenset().union(*sets)
        return _Lits(None, union if len(union) <= MAX_WORDS else None)
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        low, high, body = value
        inner = _lits_seq(list(body), fold)
        if low == high == 1:
            return inner
        if inner.exact is not None and high is not _c.MAXREPEAT and high <= 4 and sum(
                len(inner.exact) ** count for count in range(low, high + 1)) <= MAX_WORDS:
            exact = frozenset("".join(parts) for count in range(low, high + 1)
                              for parts in itertools.product(inner.exact, repeat=count))
            return _Lits(exact, _exact_usable(exact))  # a few copies: spelled out (colou?r)
        body_words = _exact_usable(inner.exact)
        if low >= 1 and body_words:
            copies = 1  # every match holds ``low`` copies in a row: as many as can be spelled out
            while copies < low and len(body_words) ** (copies + 1) <= MAX_WORDS:
                copies += 1
            return _Lits(None, frozenset("".join(parts) for parts in itertools.product(body_words, repeat=copies)))
        if low >= 1:
            return _Lits(None, inner.required)
        return _Lits(None, None)
    return _Lits(None, None)


def _class_chars(items: list[Any]) -> frozenset[str] | None:
    """The characters of a small positive class of ASCII literals and ranges (None otherwise)."""
    chars: set[str] = set()
    for op, value in items:
        if op is _c.LITERAL and value < 128:
            chars.add(chr(value))
        elif op is _c.RANGE and value[1] < 128 and value[1] - value[0] < 64:
            chars.update(chr(code) for code in range(value[0], value[1] + 1))
        else:
            return None
    return frozenset(chars)


# --- the relaxed byte regex -------------------------------------------------------------

@dataclass(frozen=True)
class Relaxed:
    """A byte regex (RE2 syntax, for LATIN1 bytes), case-blind when ``fold``."""

    pattern: bytes
    fold: bool


@dataclass(frozen=True)
class _Piece:
    """A piece of the pattern seen through a step's texts, each a regex over text with no
    newline (None: matches nothing), with whether it matches the empty string: ``whole``,
    a match of the piece in one text; ``before``, what a match holds before its first
    newline; ``after``, what it holds after its last."""

    whole: str | None
    whole_empty: bool
    before: str | None = None
    before_empty: bool = False
    after: str | None = None
    after_empty: bool = False


_EMPTY = _Piece("", True)
_NEWLINE_ONLY = _Piece(None, False, "", True, "", True)
_ALL = frozenset(range(128))
_DIGITS = frozenset(range(48, 58))
_WORDS = frozenset(ord(ch) for ch in _WORD)
_SPACES = frozenset(map(ord, "\t\n\x0b\x0c\r "))  # Python's and RE2's \s together
_RE2_SPACES = frozenset(map(ord, "\t\n\x0c\r "))
# (characters below 128, matches characters above) for each category, a superset of RE2's
_CATEGORIES = {
    _c.CATEGORY_DIGIT: (_DIGITS, False), _c.CATEGORY_NOT_DIGIT: (_ALL - _DIGITS, True),
    _c.CATEGORY_WORD: (_WORDS, False), _c.CATEGORY_NOT_WORD: (_ALL - _WORDS, True),
    _c.CATEGORY_SPACE: (_SPACES, False), _c.CATEGORY_NOT_SPACE: (_ALL - _RE2_SPACES, True),
}
MAX_RELAXED = 4000  # characters of a relaxed regex: a larger one is not worth compiling


def relaxed(pattern: str, fold: bool) -> Relaxed | None:
    """The relaxed byte regex of ``pattern`` (see the module docstring): None when there
    is none worth having (the pattern matches the empty string, every place a match may
    be cut by a newline leaves nothing to look for, or a construct cannot be translated)."""
    parsed = parse(pattern)
    if parsed is None:
        return None
    flags = parsed.state.flags
    try:
        piece = _seq(list(parsed), bool(flags & _DOTALL))
        fold = fold or folds_case(parsed)
    except (_GiveUp, RecursionError):
        return None
    if piece.whole_empty:
        return None  # it matches everywhere
    if piece.before is not None and not piece.before_empty:
        parts = [piece.whole, piece.before]
    elif piece.after is not None and not piece.after_empty:
        parts = [piece.whole, piece.after]
    elif piece.before is None and piece.after is None:
        parts = [piece.whole]
    else:
        return None  # a match may hold nothing but newlines and what is around them
    text = _union([part for part in parts if part is not None])
    if text is None or len(text) > MAX_RELAXED:
        return None
    return Relaxed(text.encode("ascii"), fold)


def literal_suffix(pattern: str, fold: bool) -> Relaxed | None:
    """A relaxed regex RE2 searches far faster, for a pattern that is a sequence with an
    ASCII character after its first item (``\\d{4}-\\d{2}``): the relaxed form of the
    sequence from that character on (``-[0-9]{2}``). Every match of the pattern holds a
    match of it within one text (it is kept only when it cannot run through a newline),
    and RE2 skips to its first byte as it does for a word. None when there is no such
    character (or only letters under case folding, which RE2 does not skip to)."""
    parsed = parse(pattern)
    if parsed is None:
        return None
    items = list(parsed)
    try:
        fold = fold or folds_case(parsed)
        dotall = bool(parsed.state.flags & _DOTALL)
        for k in range(1, len(items)):
            op, value = items[k]
            if op is not _c.LITERAL or value == 10 or value >= 128 or (fold and chr(value).isalpha()):
                continue
            piece = _seq(items[k:], dotall)
            if piece.before is not None or piece.after is not None or not piece.whole or piece.whole_empty:
                return None  # (it may run through a newline, or it matches everywhere)
            return Relaxed(piece.whole.encode("ascii"), fold) if len(piece.whole) <= MAX_RELAXED else None
    except (_GiveUp, RecursionError):
        return None
    return None


def _union(parts: list[str | None]) -> str | None:
    kept = list(dict.fromkeys(part for part in parts if part is not None))
    if not kept:
        return None
    return _bounded(kept[0] if len(kept) == 1 else "(?:" + "|".join(kept) + ")")


def _cat(a: str | None, b: str | None) -> str | None:
    return None if a is None or b is None else _bounded(a + b)


def _bounded(text: str) -> str:
    """``text``, unless it grew too large to be worth it (a hostile pattern must not make
    this quadratic: each piece is cut off at ``MAX_RELAXED``)."""
    if len(text) > MAX_RELAXED:
        raise _GiveUp
    return text


def _seq(items: list[Any], dotall: bool) -> _Piece:
    result = _EMPTY
    for op, value in items:
        result = _then(result, _one(op, value, dotall))
    return result


def _then(first: _Piece, second: _Piece) -> _Piece:
    """The pieces one after the other."""
    before = _union([first.before, _cat(first.whole, second.before)])
    before_empty = (first.before is not None and first.before_empty) or (
        first.whole is not None and first.whole_empty and second.before is not None and second.before_empty)
    after = _union([_cat(first.after, second.whole), second.after])
    after_empty = (second.after is not None and second.after_empty) or (
        first.after is not None and first.after_empty and second.whole is not None and second.whole_empty)
    return _Piece(_cat(first.whole, second.whole), first.whole_empty and second.whole_empty,
                  before, before_empty, after, after_empty)


def _one(op: Any, value: Any, dotall: bool) -> _Piece:
    if op is _c.LITERAL:
        if value == 10:
            return _NEWLINE_ONLY
        if value >= 128:
            raise _GiveUp  # (a step's non-ASCII bytes make it a candidate anyway)
        return _Piece(_char(value), False)
    if op is _c.NOT_LITERAL:
        return _class(_ALL - {value}, True)
    if op is _c.ANY:
        return _class(_ALL if dotall else _ALL - {10}, True)
    if op is _c.IN:
        return _class(*_members(value))
    if op is _c.AT:
        return _EMPTY  # an anchor or a word boundary: dropped (a superset)
    if op is _c.SUBPATTERN:
        _, add, remove, body = value
        return _seq(list(body), bool((dotall or add & _DOTALL) and not remove & _DOTALL))
    if op is _c.BRANCH:
        branches = [_seq(list(branch), dotall) for branch in value[1]]
        return _Piece(_union([b.whole for b in branches]), any(b.whole is not None and b.whole_empty for b in branches),
                      _union([b.before for b in branches]),
                      any(b.before is not None and b.before_empty for b in branches),
                      _union([b.after for b in branches]),
                      any(b.after is not None and b.after_empty for b in branches))
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        low, high, body = value
        return _repeat(_seq(list(body), dotall), low, high)
    raise _GiveUp  # a back-reference, a lookaround, a conditional...


def _repeat(body: _Piece, low: int, high: Any) -> _Piece:
    if low == high == 1:
        return body
    if body.whole is None:
        whole = "" if low == 0 else None
    else:
        whole = _group(body.whole) + _count(low, high)
    loop = "" if body.whole is None else _group(body.whole) + "*"
    before = None if body.before is None else loop + body.before
    after = None if body.after is None else body.after + loop
    return _Piece(whole, low == 0 or body.whole_empty, before, body.before_empty, after, body.after_empty)


def _group(text: str) -> str:
    return text if len(text) == 1 or (text.startswith("[") and text.endswith("]") and "]" not in text[1:-1]) \
        else "(?:" + text + ")"


def _count(low: int, high: Any) -> str:
    low = min(low, 1000)  # RE2's limit; a lower bound below the true one: a superset
    if high is _c.MAXREPEAT or high > 1000:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _members(items: list[Any]) -> tuple[frozenset[int], bool]:
    """A class's characters below 128, and whether it matches any above."""
    chars: set[int] = set()
    above = False
    negate = False
    for op, value in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            if value < 128:
                chars.add(value)
            else:
                above = True
        elif op is _c.RANGE:
            low, high = value
            chars.update(range(low, min(high, 127) + 1))
            above = above or high >= 128
        elif op is _c.CATEGORY and value in _CATEGORIES:
            members, more = _CATEGORIES[value]
            chars |= members
            above = above or more
        else:
            raise _GiveUp
    if negate:  # (a superset: what the class holds above 128 is not subtracted)
        return _ALL - chars, True
    return frozenset(chars), above


def _class(chars: frozenset[int], above: bool) -> _Piece:
    newline = 10 in chars
    kept = sorted(chars - {10})
    if not kept and not above:
        return _NEWLINE_ONLY if newline else _Piece(None, False)
    if len(kept) == 1 and not above:
        whole = _char(kept[0])
    else:
        whole = "[" + "".join(_ranges(kept)) + ("\\x80-\\xff" if above else "") + "]"
    if newline:
        return _Piece(whole, False, "", True, "", True)
    return _Piece(whole, False)


def _ranges(codes: list[int]) -> list[str]:
    out = []
    for _, group in itertools.groupby(enumerate(codes), lambda pair: pair[1] - pair[0]):
        run = [code for _, code in group]
        out.append(_char(run[0]) if len(run) == 1 else f"{_char(run[0])}-{_char(run[-1])}")
    return out


def _char(code: int) -> str:
    ch = chr(code)
    return ch if ch in _WORD else f"\\x{code:02x}"
