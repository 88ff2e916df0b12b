"""The headless commands' output boundary: nothing unsafe reaches a terminal through it.

Every field from a run is sanitised where it is formatted; this module makes the output
safe even where a field was not. A console from ``make_console`` sanitises every text it is
asked to print (keeping its styles), and writes to a ``TerminalStream``, which lets rich's
own colour sequences pass and sanitises everything else: other escape sequences and control
characters go, invisible characters and lone surrogates are shown as ``<U+202E>``. While a
subcommand runs, ``sys.stdout`` and ``sys.stderr`` are such streams too, so a plain
``print`` (a warning, an argparse error) is just as safe.
"""

from __future__ import annotations

import bisect
import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from rich.console import Console, ConsoleRenderable, RenderHook, RichCast
from rich.text import Span, Text

from agentdbg.text import sanitize, sanitize_stream, unsafe_parts


class TerminalStream:
    """A text stream that passes ``sanitize_stream(text)`` on to ``stream``. A character the
    stream's encoding cannot write (a terminal set to Latin-1) is written as ``?``."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        safe = sanitize_stream(text)
        try:
            self.stream.write(safe)
        except UnicodeEncodeError:
            self.stream.write(safe.encode(self.encoding, "replace").decode(self.encoding))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    # What print, argparse and rich ask of a stream, passed on. (Not __getattr__: rich looks
    # for an attribute streams lack on every write, and a miss through it is slow.)
    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:
        return getattr(self.stream, "errors", None)

    @property
    def closed(self) -> bool:
        return getattr(self.stream, "closed", False)


def terminal_stream(stream: TextIO) -> TextIO:
    return stream if isinstance(stream, TerminalStream) else TerminalStream(stream)  # type: ignore[return-value]


@contextlib.contextmanager
def safe_std_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as terminal streams for the duration."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = terminal_stream(sys.stdout), terminal_stream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def sanitize_text(text: Text) -> Text:
    """``text`` sanitised, its styles kept on the characters they styled."""
    plain = text.plain
    parts = unsafe_parts(plain)
    if not parts:
        return text
    pieces, position = [], 0
    for start, end, shown in parts:
        pieces += [plain[position:start], shown]
        position = end
    pieces.append(plain[position:])
    moved = _offset_map(parts)
    spans = [Span(moved(span.start), moved(span.end), span.style) for span in text.spans]
    return Text("".join(pieces), style=text.style, justify=text.justify, overflow=text.overflow,
                no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size,
                spans=[span for span in spans if span.end > span.start])


def _offset_map(parts: list[tuple[int, int, str]]):
    """old offset -> new offset, for text changed by ``parts`` (an offset inside a replaced
    part moves to the end of its replacement)."""
    starts = [start for start, _, _ in parts]
    shifts, total = [], 0
    for start, end, shown in parts:
        total += len(shown) - (end - start)
        shifts.append(total)

    def moved(offset: int) -> int:
        index = bisect.bisect_right(starts, offset) - 1
        if index < 0:
            return offset
        start, end, shown = parts[index]
        before = shifts[index - 1] if index else 0
        if offset == start:
            return offset + before
        if offset < end:
            return start + before + len(shown)
        return offset + shifts[index]

    return moved


class SanitizingHook(RenderHook):
    """Sanitises every text a console prints (its own colours are added afterwards)."""

    def process_renderables(self, renderables: list[ConsoleRenderable | RichCast]) -> list[ConsoleRenderable | RichCast]:
        return [sanitize_text(item) if isinstance(item, Text)
                else sanitize(item) if isinstance(item, str) else item  # type: ignore[misc]
                for item in renderables]


def make_console(file: TextIO | None = None) -> Console:
    # Nothing from a run is ever interpreted: markup, emoji codes and highlighting are off.
    console = Console(file=terminal_stream(file or sys.stdout), highlight=False, markup=False, emoji=False)
    console.push_render_hook(SanitizingHook())
    return console
