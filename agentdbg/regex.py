"""Regular expressions that people and files supply, matched in linear time.

Every pattern that comes from outside the program goes through here: filter expressions
(breakpoints typed in the manager or read from a sidecar file), ``/`` search, and a rules
plan's ``when``. A backtracking engine such as Python's ``re`` can take exponential time
on a short text (``(a+)+$`` against 36 ``a`` and a ``!``), and while it runs it holds the
interpreter, so no key is handled. RE2 (the ``google-re2`` package, a core dependency)
matches in time linear in the text whatever the pattern, and lets other threads run.

RE2's syntax is Python's without backreferences, lookaround, atomic groups and
possessive quantifiers; those are refused with what is wrong and at which column
(``RegexError``), like any other syntax error.

When ``re2`` cannot be imported (a platform without its wheels), Python's ``re`` is
used, guarded: a pattern with nested repetition (``(a+)+``, ``(\\w*\\s)*``) is refused,
and a search looks at the first ``FALLBACK_SEARCH_LIMIT`` characters of a text. The
guard cannot catch every slow pattern (overlapping alternatives under a repeat,
``(a|a)*``; several unbounded repeats in a row, ``\\s*\\s*x``, over a long text), and a
match under ``re`` cannot be interrupted: docs/debugger.md says so.

No textual or rich here: the engine imports this module.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - exercised by forcing the fallback in the tests
    _re2 = None

RE2, STDLIB = "re2", "re"
ENGINE = RE2 if _re2 is not None else STDLIB  # the engine in use; tests may switch it
FALLBACK_SEARCH_LIMIT = 100_000  # characters of a text one search looks at under ``re``
MAX_LENGTH = 10_000  # characters of a pattern: a longer one is certainly a mistake
_REPEATS = "*+?{"


class RegexError(ValueError):
    """A pattern that cannot be used: ``reason`` says why, ``offset`` where (0-based,
    into the pattern; None when no single place is at fault)."""

    def __init__(self, reason: str, offset: int | None = None):
        self.reason = reason
        self.offset = offset
        where = f" (at column {offset + 1})" if offset is not None else ""
        super().__init__(f"{reason}{where}")


# --- reading a pattern's structure -----------------------------------------------------

@dataclass(frozen=True)
class _Token:
    at: int
    kind: str  # escape, class, open, close, alt, repeat, char
    text: str


_BRACED_ESCAPES = "pPxN"  # \p{Greek}, \x{e9}, \N{DASH}: the braces belong to the escape


def _tokens(pattern: str) -> list[_Token]:
    """The pattern cut into escapes, character classes, group openings and closings,
    alternations, repeats and plain characters (never raises: odd input gives odd tokens)."""
    out: list[_Token] = []
    at, size = 0, len(pattern)
    while at < size:
        ch = pattern[at]
        if ch == "\\":
            end = _escape_end(pattern, at)
            out.append(_Token(at, "escape", pattern[at:end]))
        elif ch == "[":
            end = _class_end(pattern, at)
            out.append(_Token(at, "class", pattern[at:end]))
        elif ch == "(":
            end = _group_start_end(pattern, at)
            out.append(_Token(at, "open", pattern[at:end]))
        elif ch == ")":
            end = at + 1
            out.append(_Token(at, "close", ch))
        elif ch == "|":
            end = at + 1
            out.append(_Token(at, "alt", ch))
        elif ch in _REPEATS:
            end = _repeat_end(pattern, at)
            kind = "repeat" if end > at + 1 or ch != "{" else "char"
            out.append(_Token(at, kind, pattern[at:end]))
        else:
            end = at + 1
            out.append(_Token(at, "char", ch))
        at = max(end, at + 1)
    return out


_FLAG_LETTERS = re.compile(r"[A-Za-z-]*")
_GROUP_PREFIXES = ("<=", "<!", "=", "!", ">", "(")


def _group_start_end(pattern: str, at: int) -> int:
    """Where a group's opening ends: ``(``, ``(?:``, ``(?i`` of ``(?i)``, ``(?P<name>``,
    ``(?=``... (a name or comment is part of the opening: its letters are not the pattern's)."""
    if not pattern.startswith("(?", at):
        return at + 1
    size, body = len(pattern), at + 2
    if pattern.startswith(("P<", "<"), body) and not pattern.startswith(("<=", "<!"), body):
        close = pattern.find(">", body)
        return size if close == -1 else close + 1
    if pattern.startswith(("P=", "#"), body):  # a backreference by name, a comment: up to )
        close = pattern.find(")", body)
        return size if close == -1 else close
    for prefix in _GROUP_PREFIXES:
        if pattern.startswith(prefix, body):
            return body + len(prefix)
    end = _FLAG_LETTERS.match(pattern, body).end()
    return end + 1 if end < size and pattern[end] == ":" else end


def _escape_end(pattern: str, at: int) -> int:
    size = len(pattern)
    if at + 1 >= size:
        return size
    letter = pattern[at + 1]
    if letter == "Q":  # \Q...\E: everything between is literal
        close = pattern.find("\\E", at + 2)
        return size if close == -1 else close + 2
    if letter in _BRACED_ESCAPES and at + 2 < size and pattern[at + 2] == "{":
        close = pattern.find("}", at + 3)
        return size if close == -1 else close + 1
    if letter in "pP":
        return min(at + 3, size)
    return at + 2


def _class_end(pattern: str, at: int) -> int:
    size = len(pattern)
    pos = at + 1
    if pos < size and pattern[pos] == "^":
        pos += 1
    if pos < size and pattern[pos] == "]":  # a ] first is a literal
        pos += 1
    while pos < size:
        ch = pattern[pos]
        if ch == "\\":
            pos = _escape_end(pattern, pos)
            continue
        if ch == "[" and pattern.startswith("[:", pos):  # [:alpha:]
            close = pattern.find(":]", pos + 2, pattern.find("]", pos + 2) + 2)
            if close != -1:
                pos = close + 2
                continue
        if ch == "]":
            return pos + 1
        pos += 1
    return size


_COUNTED = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")


def _repeat_end(pattern: str, at: int) -> int:
    if pattern[at] == "{":
        counted = _COUNTED.match(pattern, at)
        if counted is None or counted.group(0) in ("{}", "{,}"):
            return at + 1
        end = counted.end()
    else:
        end = at + 1
    if end < len(pattern) and pattern[end] in "?+":  # lazy, or possessive
        end += 1
    return end


def _is_unbounded(repeat: str) -> bool:
    """Can this repeat take its operand more than once?"""
    base = repeat.rstrip("?+") or repeat
    if base[0] in "*+":
        return True
    if base[0] != "{":
        return False
    counted = _COUNTED.fullmatch(base)
    if counted is None:
        return False
    low, comma, high = counted.groups()
    if not comma:
        return int(low or 0) > 1
    return not high or int(high) > 1


def has_upper(pattern: str) -> bool:
    """Does the pattern spell an uppercase letter? Escapes (``\\S``, ``\\p{Lu}``), group
    names and inline flags (``(?P<Name>``, ``(?U)``) do not count: for smart case."""
    for token in _tokens(pattern):
        if token.kind == "char" and token.text.isupper():
            return True
        if token.kind == "class":
            inner = re.sub(r"\\(?:[pPxN]\{[^}]*\}|[pP].|.)|\[:\w+:\]", "", token.text)
            if any(ch.isupper() for ch in inner):
                return True
    return False


# --- what RE2 does not do -------------------------------------------------------------

_UNSUPPORTED_GROUPS = (
    ("(?<=", "lookbehind (?<=...) is not supported"),
    ("(?<!", "lookbehind (?<!...) is not supported"),
    ("(?=", "lookahead (?=...) is not supported"),
    ("(?!", "lookahead (?!...) is not supported"),
    ("(?>", "atomic groups (?>...) are not supported"),
    ("(?P=", "backreferences (?P=name) are not supported"),
    ("(?(", "conditionals (?(...)...) are not supported"),
    ("(?#", "comments (?#...) are not supported"),
)
_FLAGS = re.compile(r"\(\?([A-Za-z-]*):?")


def _unsupported(pattern: str) -> RegexError | None:
    """The first construct of Python's syntax that RE2 lacks, with its place."""
    for token in _tokens(pattern):
        text = token.text
        if token.kind == "escape":
            if len(text) == 2 and text[1] in "123456789":
                return RegexError(f"backreferences ({text}) are not supported", token.at)
            if text[1:2] in ("u", "U"):
                return RegexError(f"{text[:2]} escapes are not supported: write \\x{{...}} "
                                  "with the hexadecimal code, e.g. \\x{e9}", token.at)
            if text[1:2] == "N":
                return RegexError("\\N{...} escapes are not supported: write the character "
                                  "itself, or \\x{...} with its hexadecimal code", token.at)
        elif token.kind == "open":
            for start, reason in _UNSUPPORTED_GROUPS:
                if text.startswith(start):
                    return RegexError(reason, token.at)
            flags = _FLAGS.fullmatch(text)
            if flags is not None:
                bad = [flag for flag in flags.group(1) if flag not in "imsU-"]
                if bad:
                    return RegexError(f"the inline flag {bad[0]!r} is not supported "
                                      "(i, m, s and U are)", token.at)
        elif token.kind == "repeat" and text.endswith("+") and len(text) > 1:
            return RegexError(f"possessive repeats ({text}) are not supported", token.at)
    return None


def _unbalanced(pattern: str) -> RegexError | None:
    opened: list[int] = []
    for token in _tokens(pattern):
        if token.kind == "open":
            opened.append(token.at)
        elif token.kind == "close":
            if not opened:
                return RegexError("unbalanced parenthesis", token.at)
            opened.pop()
        elif token.kind == "class" and not token.text.endswith("]"):
            return RegexError("unterminated character set", token.at)
    if opened:
        return RegexError("missing ), unterminated subpattern", opened[-1])
    return None


def _nested_repeat(pattern: str) -> RegexError | None:
    """A repeated group that holds a repeat itself: the shape that takes a backtracking
    engine exponential time (``(a+)+$``). Refused under ``re`` only."""
    inner_repeat: list[bool] = [False]  # one entry per open group, the pattern's first
    closed_repeats = False  # the group just closed holds a repeat
    for token in _tokens(pattern):
        kind = token.kind
        if kind == "open":
            inner_repeat.append(False)
        elif kind == "close":
            closed_repeats = inner_repeat.pop() if len(inner_repeat) > 1 else False
            inner_repeat[-1] = inner_repeat[-1] or closed_repeats
            continue
        elif kind == "repeat":
            if closed_repeats and _is_unbounded(token.text):
                return RegexError("nested repetition is refused without the re2 engine: it can "
                                  "take exponential time (install google-re2)", token.at)
            inner_repeat[-1] = True
        closed_repeats = False
    return None


_RE2_REASONS = {  # RE2's words for its errors, in the words of the filter language's others
    "invalid perl operator": "unknown group syntax after (?",
    "invalid repetition size": "invalid repeat count (at most 1000)",
    "bad repetition operator": "a repeat of a repeat",
    "missing argument to repetition operator": "nothing to repeat",
    "no argument for repetition operator": "nothing to repeat",
    "invalid character class range": "invalid range in a character set",
    "invalid character class": "invalid character set",
    "trailing \\": "the pattern ends with a lone \\",
    "invalid named capture group": "invalid group name",
    "duplicate capture group name": "a group name is used twice",
}


def _place(pattern: str, reason: str, fragment: str) -> RegexError:
    """RE2's error ("missing ]: [ab") with the place its fragment names."""
    if reason == "trailing \\":
        return RegexError(_RE2_REASONS[reason], len(pattern) - 1)
    found = _unbalanced(pattern)  # RE2 names the whole pattern for these: find the place
    if found is not None:
        return found
    at = pattern.find(fragment) if fragment else -1
    return RegexError(_RE2_REASONS.get(reason, reason), at if at >= 0 else None)


# --- compiled patterns -------------------------------------------------------------------

class Pattern:
    """A compiled pattern: ``search(text)`` gives a match (``group``, ``start``, ``end``,
    ``groups``) or None. ``pattern`` is the text as given and ``flags`` the equivalent
    ``re`` flags (``re.IGNORECASE``, ``re.MULTILINE``), for code that looks at them."""

    __slots__ = ("pattern", "flags", "groups", "engine", "_search", "_limit", "_found")

    def __init__(self, pattern: str, flags: int, compiled: Any, engine: str):
        self.pattern = pattern
        self.flags = flags
        self.groups = compiled.groups
        self.engine = engine
        self._search = compiled.search
        self._limit = FALLBACK_SEARCH_LIMIT if engine == STDLIB else None
        self._found = _re2_found(compiled) if engine == RE2 else None

    def found(self, text: str) -> bool:
        """Does the pattern occur in ``text``? (``search`` without the match object: the
        test a filter makes on every step of a scan, three times faster under RE2.)"""
        if self._found is None:
            return self.search(text) is not None
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = text.translate(_SURROGATES).encode("utf-8")
        return self._found(data)

    def search(self, text: str) -> Any:
        if self._limit is not None and len(text) > self._limit:
            text = text[:self._limit]
        try:
            return self._search(text)
        except UnicodeEncodeError:  # RE2 reads UTF-8: a lone surrogate cannot be encoded
            return self._search(text.translate(_SURROGATES))

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r}, engine={self.engine})"


def _re2_found(compiled: Any) -> Any:
    """RE2's own match call on UTF-8 bytes, skipping the wrapper's offset bookkeeping; None
    when this google-re2 does not have it where expected (``found`` then uses ``search``)."""
    match = getattr(getattr(compiled, "_regexp", None), "Match", None)
    anchor = getattr(getattr(_re2, "_Anchor", None), "UNANCHORED", None)
    if match is None or anchor is None:
        return None

    def found(data: bytes) -> bool:
        return match(anchor, data, 0, len(data))[0][0] != -1

    try:
        if found(b"") != (compiled.search("") is not None):
            return None
    except Exception:  # a binding whose internals differ: use the public search
        return None
    return found


class _Surrogates(dict[str, Any]):
    """str.translate table: each lone surrogate becomes U+FFFD (same length, so match
    positions still index the original text)."""

    def __missing__(self, code: int) -> Any:
        if 0xD800 <= code <= 0xDFFF:
            return "\ufffd"
        raise LookupError(code)


_SURROGATES = _Surrogates()


def compile(pattern: str, ignore_case: bool = False) -> Pattern:
    """Compile ``pattern`` with ``^`` and ``$`` matching at every line (add ``(?s)`` to
    let ``.`` cross lines). RegexError says what is wrong and where."""
    if not isinstance(pattern, str):
        raise RegexError(f"a regular expression is text, got {type(pattern).__name__}")
    _check_length(pattern)
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    if ENGINE == RE2 and _re2 is not None:
        return Pattern(pattern, flags, _compile_re2(pattern, ignore_case), RE2)
    return Pattern(pattern, flags, _compile_stdlib(pattern, flags), STDLIB)


def compile_smart(pattern: str) -> Pattern:
    """Smart case, as in the filter language and search: case-insensitive unless the
    pattern spells an uppercase letter."""
    _check_length(pattern)
    return compile(pattern, ignore_case=not has_upper(pattern))


def _check_length(pattern: str) -> None:
    if isinstance(pattern, str) and len(pattern) > MAX_LENGTH:
        raise RegexError(f"the pattern is too long ({len(pattern):,} characters; at most {MAX_LENGTH:,})")


def escape(text: str) -> str:
    """``text`` as a pattern that matches it literally, in the engine in use."""
    if ENGINE == RE2 and _re2 is not None:
        return _re2.escape(text.translate(_SURROGATES))
    return re.escape(text)


def _compile_re2(pattern: str, ignore_case: bool) -> Any:
    surrogate = next((i for i, ch in enumerate(pattern) if 0xD800 <= ord(ch) <= 0xDFFF), None)
    if surrogate is not None:
        raise RegexError(f"a lone surrogate (U+{ord(pattern[surrogate]):04X}) is not a character", surrogate)
    found = _unsupported(pattern)
    if found is not None:
        raise found
    options = _re2.Options()
    options.log_errors = False  # RE2 would print to stderr, under the screen
    options.case_sensitive = not ignore_case
    # \Z (Python's end of text) is RE2's \z: same length, so columns stay right.
    translated = "".join("\\z" if t.kind == "escape" and t.text == "\\Z" else t.text
                         for t in _tokens(pattern)) if "\\Z" in pattern else pattern
    try:
        return _re2.compile("(?m)" + translated, options)
    except _re2.error as exc:
        message = exc.args[0] if exc.args else ""
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        reason, _, fragment = str(message).partition(": ")
        if reason == "pattern too large - compile failed":
            raise RegexError("the pattern is too large (it would need too much memory)") from None
        raise _place(pattern, reason, fragment) from None


def _compile_stdlib(pattern: str, flags: int) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: not the user's concern
            warnings.simplefilter("ignore")
            compiled = re.compile(pattern, flags)
    except re.error as exc:
        raise RegexError(exc.msg, exc.pos) from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise RegexError(str(exc) or type(exc).__name__) from None
    found = _nested_repeat(pattern)
    if found is not None:
        raise found
    return compiled
