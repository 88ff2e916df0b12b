"""Safe text: what a run says, made harmless for a terminal.

Everything in a trace is untrusted (tool output, model text, imported files). Before it
reaches a screen, terminal control sequences must go: a stray ``ESC [2J`` clears the
screen, OSC 8 forges links, OSC 52 writes the user's clipboard, ``\\r`` and cursor moves
overwrite what is shown. ``sanitize`` removes them and keeps every other character.

Pure ``str -> str``: usable by the headless commands and the screens alike, with no
dependency on rich or textual.
"""

from __future__ import annotations

import re
from typing import Any

# One alternative per kind of sequence; the order matters (the longest forms first).
_CONTROL = re.compile(
    r"""
    (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?       # CSI: colours, cursor moves, erase
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])                       # OSC (links, clipboard), DCS, SOS, PM, APC:
        [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)?                    #   a string up to BEL or ST (or the end)
  | \x1b [\x20-\x2f]* [\x30-\x7e]?                                # any other ESC sequence, or a lone ESC
  | [\x00-\x08\x0b-\x1f\x7f-\x9f]                                 # other C0 and C1 controls, DEL (not \t, \n)
    """,
    re.VERBOSE,
)


def sanitize(text: str) -> str:
    """``text`` without terminal control sequences or control characters.

    Newlines and tabs stay; ``\\r\\n`` becomes ``\\n``; everything else printable
    (any script, emoji, combining marks) is kept unchanged."""
    if not isinstance(text, str):
        text = str(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return _CONTROL.sub("", text)


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


def flat(text: Any, limit: int | None = None) -> str:
    """Sanitized text with every run of whitespace (newlines included) made one space,
    cut to ``limit`` characters with ``…``: for status lines, titles and table cells."""
    text, cut = _head(text, limit)
    collapsed = " ".join(sanitize(text).split())
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
