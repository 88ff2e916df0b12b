"""A pane that shows prepared lines through the Line API.

Subclasses say what to show as a list of ``Text`` (wrapped here to the pane's width);
only the rows on screen are painted, and Home/End still move through the run. Lines are
styled once when built, and a new content of a different length changes the scroll range
without a relayout of the screen (stepping repaints only the panes that changed).
"""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

Paragraph = Text | tuple[int, Text]


def set_virtual_size(widget: ScrollView, size: Size) -> None:
    """Change a scroll view's content size, updating its scrollbar without asking the
    screen for a new layout (its scrollbar is always shown, so its layout cannot change)."""
    if size == widget.virtual_size:
        return
    widget.set_reactive(Widget.virtual_size, size)
    widget._scroll_update(size)
    widget.refresh()


def wrap(paragraphs: list[Paragraph], width: int, console: Console, style: Style) -> tuple[list[Strip], list[int]]:
    """Paragraphs wrapped to ``width`` as styled strips, and where each paragraph starts.
    A paragraph given as ``(indent, text)`` wraps with a hanging indent: lines after the
    first start ``indent`` cells in."""
    lines: list[Strip] = []
    starts: list[int] = []
    for paragraph in paragraphs:
        starts.append(len(lines))
        indent = 0
        if isinstance(paragraph, tuple):
            indent, paragraph = paragraph
            indent = min(indent, width // 2)
        wrapped = paragraph.wrap(console, max(width - indent, 1), overflow="fold", no_wrap=False)
        for number, line in enumerate(wrapped):
            segments = list(line.render(console, end=""))
            pad = indent if number else 0
            if pad:
                segments.insert(0, Segment(" " * pad))
            strip = Strip(segments, line.cell_len + pad)
            lines.append(strip.crop_extend(0, width, style).apply_style(style))
    return lines, starts


class LinePane(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LinePane {
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
    }
    """
    BINDINGS = [
        Binding("home", "app.first_step", show=False),
        Binding("end", "app.last_step", show=False),
    ]

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self._lines: list[Strip] = []
        self.paragraph_starts: list[int] = []  # first line of each paragraph
        self._built_width = -1
        self._blank: Strip | None = None
        self._built_key: object = None

    def content_key(self) -> object:
        """What the content depends on; an unchanged key skips rebuilding (None: always)."""
        return None

    def build(self, width: int) -> list[Paragraph]:
        """The pane's content as paragraphs; each is wrapped to ``width``."""
        return []

    def build_lines(self, width: int) -> tuple[list[Strip], list[int]]:
        """The pane's content as styled strips (subclasses may cache parts of it)."""
        return wrap(self.build(width), width, self.app.console, self.rich_style)

    @property
    def text_width(self) -> int:
        return max(self.scrollable_content_region.width, 1)

    def rebuild(self) -> None:
        """Re-read the content (after the state it shows has changed)."""
        if not self.is_mounted or self.scrollable_content_region.width < 1:
            return  # not laid out yet (on_resize builds it): never wrap a step to one column
        width = self.text_width
        key = self.content_key()
        if key is not None and key == self._built_key and width == self._built_width:
            return
        self._built_key = key
        lines, starts = self.build_lines(width)
        old_lines, old_top, old_width = self._lines, int(self.scroll_offset.y), self._built_width
        self._lines = lines
        self.paragraph_starts = starts
        self._built_width = width
        self._blank = None
        set_virtual_size(self, Size(width, len(lines)))
        self.after_rebuild(lines)
        top = int(self.scroll_offset.y)
        if width != old_width or top != old_top:
            self.refresh()  # (a new scroll position repaints the whole pane anyway)
            return
        # Same place: repaint only the rows that differ (a step often changes a few).
        changed = [y for y in range(self.size.height)
                   if _line(old_lines, top + y) != _line(lines, top + y)]
        if changed:
            self.refresh(*(Region(0, y, self.size.width, 1) for y in changed))

    def after_rebuild(self, lines: list[Strip]) -> None:
        """Hook: e.g. scroll to the part that matters."""

    @property
    def line_texts(self) -> list[str]:
        """What the pane shows, as plain strings (for tests and search)."""
        return [strip.text.rstrip() for strip in self._lines]

    def on_resize(self) -> None:
        if self.text_width != self._built_width:
            self.rebuild()

    def on_mount(self) -> None:
        super().on_mount()
        self.rebuild()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.is_mounted:
            self._built_width = -1
            self._built_key = None
            self.rebuild()

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        if 0 <= index < len(self._lines):
            return self._lines[index]
        if self._blank is None or self._blank.cell_length != self.size.width:
            self._blank = Strip.blank(self.size.width, self.rich_style)
        return self._blank


def _line(lines: list[Strip], index: int) -> Strip | None:
    return lines[index] if 0 <= index < len(lines) else None
