"""A pane that shows prepared lines through the Line API.

Subclasses say what to show as a list of ``Text`` (wrapped here to the pane's width);
only the rows on screen are painted, and Home/End still move through the run.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LinePane(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LinePane {
        overflow-x: hidden;
        scrollbar-gutter: stable;
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

    def build(self, width: int) -> list[Text | tuple[int, Text]]:
        """The pane's content as paragraphs; each is wrapped to ``width``. A paragraph
        given as ``(indent, text)`` wraps with a hanging indent: lines after the first
        start ``indent`` cells in."""
        return []

    @property
    def text_width(self) -> int:
        return max(self.scrollable_content_region.width, 1)

    def rebuild(self) -> None:
        """Re-read the content (after the state it shows has changed)."""
        if not self.is_mounted:
            return
        width = self.text_width
        console = self.app.console
        lines: list[Strip] = []
        starts: list[int] = []
        for paragraph in self.build(width):
            starts.append(len(lines))
            indent = 0
            if isinstance(paragraph, tuple):
                indent, paragraph = paragraph
                indent = min(indent, width // 2)
            wrapped = paragraph.wrap(console, width - indent, overflow="fold", no_wrap=False)
            for number, line in enumerate(wrapped):
                segments = list(line.render(console, end=""))
                pad = indent if number else 0
                if pad:
                    segments.insert(0, Segment(" " * pad))
                lines.append(Strip(segments, line.cell_len + pad))
        self._lines = lines
        self.paragraph_starts = starts
        self._built_width = width
        self.virtual_size = Size(width, len(lines))
        self.after_rebuild(lines)
        self.refresh()

    def after_rebuild(self, lines: list[Strip]) -> None:
        """Hook: e.g. scroll to the part that matters."""

    @property
    def line_texts(self) -> list[str]:
        """What the pane shows, as plain strings (for tests and search)."""
        return [strip.text for strip in self._lines]

    def on_resize(self) -> None:
        if self.text_width != self._built_width:
            self.rebuild()

    def on_mount(self) -> None:
        super().on_mount()
        self.rebuild()

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        width = self.size.width
        style = self.rich_style
        if 0 <= index < len(self._lines):
            return self._lines[index].crop_extend(0, width, style).apply_style(style)
        return Strip.blank(width, style)
