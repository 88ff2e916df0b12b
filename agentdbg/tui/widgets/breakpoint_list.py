"""The breakpoint manager's list: a header, then one row per user breakpoint.

A ``ScrollView`` on the Line API: only the rows on screen are painted, read from the
``BreakpointSet`` by position, so a file with 100,000 breakpoints opens as quickly as one
with three, and an edit repaints a few rows instead of rebuilding a table.
"""

from __future__ import annotations

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agentdbg.debugger.breakpoints import Breakpoint, BreakpointSet
from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.lines import set_virtual_size

MARK_WIDTH, KIND_WIDTH, COUNT_WIDTH = 2, 7, 8
SPEC_READ = 2000  # characters of a spec looked at to paint a row (a huge one stays cheap)
EMPTY = "No breakpoints yet: b sets one on the current step; add a step, tool or filter below."


class BreakpointList(ScrollView, can_focus=True):
    """The user's breakpoints; ``cursor`` is the selected row (0-based)."""

    COMPONENT_CLASSES = {
        "breakpoint-list--header",
        "breakpoint-list--cursor",
        "breakpoint-list--on",
        "breakpoint-list--off",
        "breakpoint-list--empty",
    }
    DEFAULT_CSS = """
    BreakpointList {
        height: 12;
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        background: $surface;
    }
    BreakpointList > .breakpoint-list--header {
        text-style: bold;
        background: $panel;
    }
    BreakpointList > .breakpoint-list--cursor {
        background: $primary-darken-3;
        text-style: bold;
    }
    BreakpointList:focus > .breakpoint-list--cursor {
        background: $primary-darken-2;
    }
    BreakpointList > .breakpoint-list--on {
        color: $error;
        text-style: bold;
    }
    BreakpointList > .breakpoint-list--off {
        color: $text-muted;
    }
    BreakpointList > .breakpoint-list--empty {
        color: $text-muted;
    }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False, id="breakpoint_list.up"),
        Binding("down,j", "move(1)", "Down", show=False, id="breakpoint_list.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="breakpoint_list.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="breakpoint_list.page_down"),
        Binding("home", "move_to(0)", show=False),
        Binding("end", "move_to(-1)", show=False),
    ]

    def __init__(self, breakpoints: BreakpointSet, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.breakpoints = breakpoints
        self.cursor = 0

    # --- what is shown -----------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.breakpoints)

    def selected(self) -> Breakpoint | None:
        if 0 <= self.cursor < self.row_count:
            return self.breakpoints[self.cursor]
        return None

    def refresh_rows(self) -> None:
        """After the breakpoints changed: new length, cursor kept in range, rows repainted."""
        set_virtual_size(self, Size(self.size.width, self.row_count + 1))  # + the header
        self.move_cursor(self.cursor)
        self.refresh()

    def move_cursor(self, row: int) -> None:
        self.cursor = max(0, min(row, self.row_count - 1))
        self.scroll_to_row(self.cursor)
        self.refresh()

    def scroll_to_row(self, row: int) -> None:
        rows_shown = max(self.scrollable_content_region.height - 1, 1)  # the header stays
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True, force=True)
        elif row >= top + rows_shown:
            self.scroll_to(y=row - rows_shown + 1, animate=False, immediate=True, force=True)

    def row_text(self, row: int, width: int = 100) -> str:
        """A row as plain text (for tests and screen readers)."""
        return Strip(self._row_segments(self.breakpoints[row], width, Style())).text

    # --- painting ----------------------------------------------------------------------
    def on_mount(self) -> None:
        self.refresh_rows()

    def on_resize(self) -> None:
        set_virtual_size(self, Size(self.size.width, self.row_count + 1))

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"breakpoint-list--{name}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width  # the scrollbar's column aside
        base = self.rich_style
        if y == 0:
            return self._header(width).apply_style(base)
        row = y - 1 + int(self.scroll_offset.y)
        if row >= self.row_count:
            if row == 0:
                return Strip([Segment(" " + EMPTY, self._style("empty"))]).crop_extend(0, width, None).apply_style(base)
            return Strip.blank(width, base)
        strip = Strip(self._row_segments(self.breakpoints[row], width, self._style("on"), self._style("off")))
        strip = strip.crop_extend(0, width, None)
        if row == self.cursor:
            strip = strip.apply_style(self._style("cursor"))
        return strip.apply_style(base)

    def _header(self, width: int) -> Strip:
        spec_width = self._spec_width(width)
        text = ("on".ljust(MARK_WIDTH + 1) + "kind".ljust(KIND_WIDTH) + "where / condition".ljust(spec_width)
                + "hits".rjust(COUNT_WIDTH) + "ignore".rjust(COUNT_WIDTH))
        return Strip([Segment(text, self._style("header"))]).crop_extend(0, width, self._style("header"))

    @staticmethod
    def _spec_width(width: int) -> int:
        return max(width - 1 - MARK_WIDTH - KIND_WIDTH - 2 * COUNT_WIDTH, 10)

    def _row_segments(self, bp: Breakpoint, width: int, on: Style, off: Style | None = None) -> list[Segment]:
        spec_width = self._spec_width(width)
        return [
            Segment(" "),
            Segment("● " if bp.enabled else "○ ", on if bp.enabled else (off or on)),
            Segment(bp.kind.ljust(KIND_WIDTH)),
            Segment(set_cell_size(one_line(bp.spec[:SPEC_READ], spec_width - 1), spec_width)),
            Segment(f"{bp.hits:>{COUNT_WIDTH},}{bp.ignore:>{COUNT_WIDTH},}"),
        ]

    # --- input ---------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_move_to(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else self.row_count - 1)

    def action_page(self, direction: int) -> None:
        self.move_cursor(self.cursor + direction * max(self.scrollable_content_region.height - 2, 1))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        row = offset.y - 1 + int(self.scroll_offset.y)
        if row < self.row_count:
            self.focus()
            self.move_cursor(row)
