"""Untrusted text made safe to show: control sequences stripped, markup never read.

Everything in a run (thoughts, arguments, observations, even tool names) came from a
model or a file. It is cleaned with ``agentdbg.text.sanitize`` and always wrapped in
``rich.text.Text`` so that ``[red]`` or ``[link=...]`` stay literal.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text

from agentdbg.text import flat, sanitize


def clean(value: Any) -> str:
    """``value`` as text with every terminal control sequence removed (tabs expanded)."""
    return sanitize(value if isinstance(value, str) else str(value)).replace("\t", "    ")


def clip(value: Any, limit: int) -> tuple[str, int]:
    """At most ``limit`` characters of ``value``, cleaned as ``clean`` does, and how many
    were left out: a huge text (a 200 MB observation) is cut before it is cleaned, and
    never rendered whole."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return clean(text), 0
    return clean(text[:limit]), len(text) - limit


def clipped(value: Any, limit: int) -> str:
    """``clip`` as one string, saying how much was left out."""
    text, more = clip(value, limit)
    return f"{text}… [{more:,} more characters]" if more else text


# Clean text folded onto one line (for the timeline, titles and status lines).
one_line = flat


def quoted(value: Any, limit: int) -> str:
    """``one_line`` in quotes, as typed: a regex's backslashes are not doubled as by
    ``repr`` (double quotes when it holds a single quote and no double one)."""
    text = one_line(value if isinstance(value, str) else str(value), limit)
    quote = '"' if "'" in text and '"' not in text else "'"
    return f"{quote}{text}{quote}"


def plain(value: Any, style: str | Style = "") -> Text:
    """A ``Text`` that shows ``value`` literally: markup is never interpreted."""
    return Text(clean(value), style=style)
