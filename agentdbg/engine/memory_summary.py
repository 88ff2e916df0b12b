"""The rolling summary: old turns folded into a short text through an injected summarizer.

A summarizer is any callable ``(previous_summary, turns) -> new_summary``: it receives the
summary so far and the turns that just left the recent buffer (oldest first), and returns
the whole new summary. Give it a ``name`` attribute and the run header says which one was
used. Two deterministic summarizers ship; a model plugs in as a function that prompts it
with the previous summary and the turns (see ``docs/memory.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agentdbg.text import collapse_space  # not sanitized: a summary is data, cleaned when shown

Summarizer = Callable[[str, Sequence[str]], str]

_ACTION = re.compile(r"^[ \t]*Action(?:[ \t]+\d+)?[ \t]*:[ \t]*(.*)$", re.M)
_ACTION_INPUT = re.compile(r"^[ \t]*Action[ \t]+Input[ \t]*:[ \t]*(.*)$", re.M)
_OBSERVATION = re.compile(r"^[ \t]*Observation(?:[ \t]+\d+)?[ \t]*:[ \t]*", re.M)
_THOUGHT = re.compile(r"^[ \t]*Thought(?:[ \t]+\d+)?[ \t]*:[ \t]*(.*)$", re.M)
ELLIPSIS = "..."





def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marked with ``...`` when cut."""
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return text[:limit]
    return text[: limit - len(ELLIPSIS)].rstrip() + ELLIPSIS


def summarize_memory(turns: Sequence[str], summarizer: Summarizer, previous: str = "") -> str:
    """Fold ``turns`` (oldest first) into the rolling summary ``previous``; returns the new
    summary. No turns: the summary is unchanged and the summarizer is not called."""
    if not turns:
        return previous
    summary = summarizer(previous, list(turns))
    if not isinstance(summary, str):
        raise TypeError(f"a summarizer must return text, got {type(summary).__name__}")
    return summary


def turn_gist(turn: str) -> str:
    """One line for a turn: ``action -> observation`` (the thought when there is no action)."""
    observation = ""
    found = list(_OBSERVATION.finditer(turn))
    if found:
        observation = collapse_space(turn[found[-1].end():])
        turn = turn[: found[-1].start()]
    action = _ACTION.search(turn)
    if action:
        head = collapse_space(action.group(1))
        given = _ACTION_INPUT.search(turn, action.end())
        if given:
            head += " " + collapse_space(given.group(1))
    else:
        thought = _THOUGHT.search(turn)
        head = collapse_space(thought.group(1) if thought else turn)
    return f"{head} -> {observation}" if observation else head


class ExtractiveSummarizer:
    """Keeps one line per folded turn, ``action -> observation``, each cut to
    ``line_chars``; the summary keeps the newest lines that fit in ``max_chars`` (the
    oldest lines drop out first, so it never grows without bound)."""

    def __init__(self, max_chars: int = 400, line_chars: int = 100):
        if max_chars < 1 or line_chars < 1:
            raise ValueError("summary sizes must be at least 1 character")
        self.max_chars = max_chars
        self.line_chars = line_chars
        self.name = "extractive"

    def __call__(self, previous: str, turns: Sequence[str]) -> str:
        lines = previous.splitlines() if previous else []
        lines += [shorten(turn_gist(turn), min(self.line_chars, self.max_chars)) for turn in turns]
        kept: list[str] = []
        size = 0
        for line in reversed(lines):
            extra = len(line) + (1 if kept else 0)
            if size + extra > self.max_chars:
                break
            kept.append(line)
            size += extra
        return "\n".join(reversed(kept))

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(max_chars={self.max_chars}, line_chars={self.line_chars})"


class TruncatingSummarizer:
    """Appends the folded turns, on one line each, and keeps the last ``max_chars``
    characters: the crudest summary, the newest text wins."""

    def __init__(self, max_chars: int = 400):
        if max_chars < 1:
            raise ValueError("summary size must be at least 1 character")
        self.max_chars = max_chars
        self.name = "truncate"

    def __call__(self, previous: str, turns: Sequence[str]) -> str:
        text = "\n".join(([previous] if previous else []) + [collapse_space(turn) for turn in turns])
        if len(text) <= self.max_chars:
            return text
        if self.max_chars <= len(ELLIPSIS):
            return text[-self.max_chars:]
        return ELLIPSIS + text[-(self.max_chars - len(ELLIPSIS)):]

    def __repr__(self) -> str:
        return f"TruncatingSummarizer(max_chars={self.max_chars})"


SUMMARIZERS: dict[str, Callable[[int], Summarizer]] = {
    "extractive": lambda max_chars: ExtractiveSummarizer(max_chars),
    "truncate": lambda max_chars: TruncatingSummarizer(max_chars),
}


def summarizer_name(summarizer: Summarizer) -> str:
    name = getattr(summarizer, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(summarizer, "__qualname__", type(summarizer).__name__)
