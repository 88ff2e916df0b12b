"""Untrusted text made safe to show: control sequences stripped, markup never read.

Everything in a run (thoughts, arguments, observations, even tool names) came from a
model or a file. It is cleaned with ``agentdbg.text.sanitize`` and always wrapped in
``rich.text.Text`` so that ``[red]`` or ``[link=...]`` stay literal.
"""

from __future__ import annotations

import re
from typing import Any

from rich.style import Style
from rich.text import Text

try:  # the project's sanitiser; a small stand-in keeps the screen safe without it
    from agentdbg.text import sanitize as _sanitize
except ImportError:  # pragma: no cover - only while agentdbg.text is absent
    _sanitize = None

_CONTROL = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (links, clipboard, titles)
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS, PM, APC, SOS strings
    r"|\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI (colours, cursor moves)
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x1b.?"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # other C0 / C1 controls (newline and tab kept)
)


def clean(value: Any) -> str:
    """``value`` as text with every terminal control sequence removed."""
    text = value if isinstance(value, str) else str(value)
    if _sanitize is not None:
        text = _sanitize(text)
    # Belt and braces: whatever the sanitiser keeps, no escape byte reaches the screen.
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\t", "    "))


def one_line(value: Any, limit: int | None = None) -> str:
    """Clean text folded onto one line (for the timeline and titles)."""
    text = " ".join(clean(value).split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def plain(value: Any, style: str | Style = "") -> Text:
    """A ``Text`` that shows ``value`` literally: markup is never interpreted."""
    return Text(clean(value), style=style)
