"""Safe text: what a run says, made harmless for a terminal.

Everything in a trace is untrusted (tool output, model text, imported files). Before it
reaches a screen, terminal control sequences must go: a stray ``ESC [2J`` clears the
screen, OSC 8 forges links, OSC 52 writes the user's clipboard, ``\\r`` and cursor moves
overwrite what is shown. ``sanitize`` removes them.

Characters that draw nothing but change what is seen (bidi overrides that reverse text,
zero-width spaces that make ``calc`` and ``calc\\u200b`` look alike, tag characters that
hide text) and lone surrogates (which no terminal can be sent) are shown instead, as
``<U+202E>``. A joiner or selector that legitimate text needs stays as it is: the
zero-width joiner of an emoji sequence, ZWNJ in Persian or Devanagari, the variation
selector after an emoji, the tags of a subdivision flag.

``sanitize`` is the one sanitiser; ``sanitize_stream`` is the same for the output of a
renderer that colours text it has already sanitised, and ``escape_json`` gives JSON text
the same protection without changing what it decodes to; ``escape_visible`` gives it to
plain text that must keep every character (a CSV cell): what would be removed or shown is
written as ``<U+001B>``, and ``unescape_visible`` gives the exact text back. Pure
``str -> str``, with no dependency on rich or textual.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Terminal control sequences, removed. One alternative per kind; the order matters (the
# longest forms first).
_CONTROL = r"""
    (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?       # CSI: colours, cursor moves, erase
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])                       # OSC (links, clipboard), DCS, SOS, PM, APC:
        [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)?                    #   a string up to BEL or ST (or the end)
  | \x1b [\x20-\x2f]* [\x30-\x7e]?                                # any other ESC sequence, or a lone ESC
  | [\x00-\x08\x0b-\x1f\x7f-\x9f]                                 # other C0 and C1 controls, DEL (not \t, \n)
"""
# A subdivision flag (black flag, tag letters, cancel tag): the only legitimate use of tags.
_FLAG = "\U0001f3f4[\U000e0020-\U000e007e]{1,30}\U000e007f"
# Invisible characters (Unicode's default-ignorable code points, soft hyphen aside), line
# and paragraph separators, and surrogates. _shown decides which of them are shown.
_INVISIBLE_BMP = ("\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                  "\u3164\ud800-\udfff\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb")
_INVISIBLE = _INVISIBLE_BMP + "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
_UNSAFE = re.compile(f"(?P<control>{_CONTROL}) | (?P<flag>{_FLAG}) | [{_INVISIBLE}]", re.VERBOSE)
_UNSAFE_KEEPING_SGR = re.compile(
    rf"(?P<sgr>\x1b\[[0-9;]*m) | (?P<control>{_CONTROL}) | (?P<flag>{_FLAG}) | [{_INVISIBLE}]", re.VERBOSE)
_INVISIBLE_CHAR = re.compile(f"[{_INVISIBLE}]")
# Where any of the above can start: one character class, scanned much faster than the
# patterns themselves, so text with nothing to change (nearly all of it) is returned as is.
# (Any character beyond the BMP is suspect: one range there scans faster than the few.)
_SUSPECT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE_BMP}\U00010000-\U0010ffff]")
_ASCII_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n"
_LATIN1_PRINTABLE = _ASCII_PRINTABLE + bytes(range(0xA0, 0x100))
_JSON_UNSAFE = re.compile(f"(?P<control>[\x7f-\x9f]) | (?P<flag>{_FLAG}) | [{_INVISIBLE}]", re.VERBOSE)
# For escape_visible: every control character but tab, newline and the CR of a CRLF; and
# text already written as an escape (its "<" is escaped, so unescaping is exact).
_VISIBLE_ESCAPE = "<U+{:04X}>"
_ESCAPED = re.compile(r"<U\+([0-9A-F]{4,6})>")
_VISIBLE_UNSAFE = re.compile(
    rf"(?P<escaped><U\+[0-9A-F]{{4,6}}>) | (?P<control>[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n))"
    rf" | (?P<flag>{_FLAG}) | [{_INVISIBLE}]", re.VERBOSE)

ZWNJ, ZWJ, VS16 = "\u200c", "\u200d", "\ufe0f"
_VARIATION_SELECTORS = frozenset(chr(c) for c in [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
_MONGOLIAN_SELECTORS = frozenset("\u180b\u180c\u180d\u180f")
_VARIANT_CATEGORIES = frozenset({"So", "Sm", "Sk", "Po", "No", "Lo"})  # what variation sequences follow
# Scripts whose text uses ZWJ and ZWNJ: Arabic, Syriac, Thaana, N'Ko and their extensions,
# the Indic and South-East Asian scripts, Mongolian, and those of the supplementary planes.
_JOINING_SCRIPT = re.compile("[\u0600-\u08ff\u0900-\u0dff\u0f00-\u109f\u1700-\u18af\u1900-\u1cff"
                             "\ua800-\uabff\ufb50-\ufdff\ufe70-\ufefc\U00010a00-\U00010a5f\U00011000-\U00011fff]")


def visible(char: str) -> str:
    """How a character that draws nothing is shown: ``<U+202E>``."""
    return f"<U+{ord(char):04X}>"


def _char(text: str, index: int) -> str:
    return text[index] if 0 <= index < len(text) else ""


def _kept_selector(text: str, index: int) -> bool:
    """Is the variation selector at ``index`` part of a legitimate variation sequence? It
    must follow a character that has variants: a symbol or emoji (❤ ‼ ↔ ™), an ideograph or
    another letter without case (CJK, Myanmar), or a keycap's 0-9 # *; not a Latin letter
    (``é`` then a selector looks like ``é``), not another selector (a run of them hides
    data), not a space or a control."""
    before = _char(text, index - 1)
    if not before:
        return False
    if before < "\x80":
        return before in "0123456789#*"
    if before in _VARIATION_SELECTORS or _INVISIBLE_CHAR.match(before):
        return False
    return unicodedata.category(before) in _VARIANT_CATEGORIES


def _kept_joiner(text: str, index: int) -> bool:
    """Does the ZWJ or ZWNJ at ``index`` join something: two letters of a script that uses
    joiners, or (ZWJ only) an emoji to the next one of its sequence?"""
    before, after = _char(text, index - 1), _char(text, index + 1)
    if not before or not after:
        return False
    if _JOINING_SCRIPT.match(before) and _JOINING_SCRIPT.match(after):
        return True
    if text[index] != ZWJ or unicodedata.category(after) != "So":
        return False
    if before == VS16:
        return _kept_selector(text, index - 1)
    return unicodedata.category(before) in ("So", "Sk")


def _shown(match: re.Match[str]) -> str:
    """What replaces one match of the unsafe patterns: nothing for a control sequence, the
    text itself where it is legitimate, else the invisible character made visible."""
    kind = match.lastgroup
    if kind == "control":
        return ""
    text = match.group()
    if kind is not None:  # a flag, or a colour sequence of rich's own
        return text
    if text in _VARIATION_SELECTORS:
        return text if _kept_selector(match.string, match.start()) else visible(text)
    if text == ZWJ or text == ZWNJ:
        return text if _kept_joiner(match.string, match.start()) else visible(text)
    if text in _MONGOLIAN_SELECTORS:
        before = _char(match.string, match.start() - 1)
        if "\u1800" <= before <= "\u18af" and not _INVISIBLE_CHAR.match(before):
            return text
    return visible(text)


def _suspect(text: str) -> bool:
    """Might ``sanitize`` change ``text``? (False is certain: nothing to change.)"""
    if text.isascii():  # the common case, checked in C at memory speed
        return not text.isprintable() and bool(text.encode("ascii").translate(None, _ASCII_PRINTABLE))
    try:  # Latin-1 text (accents, the · of a guards line): only C1 controls to look for
        return bool(text.encode("latin-1").translate(None, _LATIN1_PRINTABLE))
    except UnicodeEncodeError:
        return _SUSPECT.search(text) is not None


def sanitize(text: str) -> str:
    """``text`` without terminal control sequences or control characters, and with the
    characters that draw nothing shown (``<U+202E>``), lone surrogates included.

    Newlines and tabs stay; ``\\r\\n`` becomes ``\\n``; everything else printable
    (any script, emoji, combining marks) is kept unchanged."""
    if not isinstance(text, str):
        text = str(text)
    if text.isascii() and text.isprintable():  # most fields: one plain line
        return text
    return _UNSAFE.sub(_shown, text) if _suspect(text) else text


def sanitize_stream(text: str) -> str:
    """``sanitize``, except that SGR colour sequences (``ESC [ digits ; m``) pass: for what a
    renderer writes after styling text that was sanitised before."""
    return _UNSAFE_KEEPING_SGR.sub(_shown, text) if _suspect(text) else text


def unsafe_parts(text: str) -> list[tuple[int, int, str]]:
    """Where ``sanitize`` changes ``text``: (start, end, replacement), in order (for
    sanitising styled text span by span)."""
    parts: list[tuple[int, int, str]] = []
    if not _suspect(text):
        return parts
    for match in _UNSAFE.finditer(text):
        shown = _shown(match)
        if shown != match.group():
            parts.append((match.start(), match.end(), shown))
    return parts


def _json_escape(match: re.Match[str]) -> str:
    text = match.group()
    if match.lastgroup == "flag" or (match.lastgroup is None and _shown(match) == text):
        return text
    code = ord(text)
    if code > 0xFFFF:  # JSON escapes a character beyond the BMP as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def escape_json(json_text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with C1 controls,
    DEL, lone surrogates and the characters ``sanitize`` would show written as ``\\uXXXX``
    escapes: still valid JSON, decoding to exactly the same strings."""
    if json_text.isascii():  # json.dumps has escaped every C0 control: only DEL is left
        return json_text if "\x7f" not in json_text else _JSON_UNSAFE.sub(_json_escape, json_text)
    return _JSON_UNSAFE.sub(_json_escape, json_text) if _SUSPECT.search(json_text) else json_text


def _visible_escape(match: re.Match[str]) -> str:
    text = match.group()
    kind = match.lastgroup
    if kind == "escaped":
        return "<U+003C>" + text[1:]
    if kind == "control":
        return _VISIBLE_ESCAPE.format(ord(text))
    if kind == "flag" or _shown(match) == text:
        return text
    return _VISIBLE_ESCAPE.format(ord(text))


def escape_visible(text: str) -> str:
    """``text`` with what ``sanitize`` would remove or show written as ``<U+XXXX>``
    instead: control characters (tab, newline and the CR of a CRLF aside), DEL, C1
    controls, bidi overrides, zero-width characters, lone surrogates; and the ``<`` of
    text that already reads ``<U+XXXX>``, so that ``unescape_visible`` gives back exactly
    ``text``. Printable text (any script, emoji, joiners that join) is kept as it is."""
    if text.isascii() and text.isprintable():  # most cells: one plain line
        return text if "<U+" not in text else _VISIBLE_UNSAFE.sub(_visible_escape, text)
    if "<U+" in text or _suspect(text):
        return _VISIBLE_UNSAFE.sub(_visible_escape, text)
    return text


def _unescaped(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    return chr(code) if code <= 0x10FFFF else match.group()


def unescape_visible(text: str) -> str:
    """The text ``escape_visible`` was given: each ``<U+XXXX>`` made its character again."""
    return _ESCAPED.sub(_unescaped, text) if "<U+" in text else text


def _head(text: Any, limit: int | None) -> tuple[str, bool]:
    """As much of ``text`` as ``limit`` shown characters can need, and whether it was cut:
    cleaning only removes characters, so a huge text is never cleaned whole."""
    text = text if isinstance(text, str) else str(text)
    if limit is None or len(text) <= 4 * limit + 64:
        return text, False
    return text[: 4 * limit + 64], True


def one_line(text: str, limit: int | None = None) -> str:
    """Sanitized text on one line (newlines shown as ``⏎``), cut to ``limit`` characters."""
    text, cut = _head(text, limit)
    flat = sanitize(text).replace("\n", " ⏎ ").replace("\t", " ")
    if limit is not None and (cut or len(flat) > limit):
        return flat[: max(limit - 1, 0)] + "…"
    return flat


def collapse_space(text: str) -> str:
    """Every run of whitespace (newlines included) made one space, nothing else changed."""
    return " ".join(text.split())


def flat(text: Any, limit: int | None = None) -> str:
    """Sanitized text with every run of whitespace (newlines included) made one space,
    cut to ``limit`` characters with ``…``: for status lines, titles and table cells.
    (``one_line`` instead shows where the lines broke.)"""
    text, cut = _head(text, limit)
    collapsed = collapse_space(sanitize(text))
    if limit is not None and (cut or len(collapsed) > limit):
        return collapsed[: max(limit - 1, 0)] + "…"
    return collapsed


def shorten(text: str, limit: int) -> str:
    """Sanitized text cut to ``limit`` characters, saying how much was left out."""
    text = text if isinstance(text, str) else str(text)
    head, cut = _head(text, limit)
    clean = sanitize(head)
    if not cut and len(clean) <= limit:
        return clean
    more = len(text) - len(head) + len(clean) - limit if cut else len(clean) - limit
    return f"{clean[:limit]}… [{max(more, 1):,} more characters]"


def plural(count: int, word: str) -> str:
    """``1 step``, ``2,000 steps``."""
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"
