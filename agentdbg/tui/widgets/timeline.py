"""The timeline: one row per step, painted only where it is visible.

A ``ScrollView`` on the Line API whose virtual height is the run's step count (plus a
row for the start), so a million-step trace costs what the visible rows cost. Rows are
read from the run lazily and kept in a small cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agentdbg.model.state import StepRecord
from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.lines import set_virtual_size

# One cell each: what kind of step this was.
MARKERS = {
    "error": "✗",
    "repeat": "↻",
    "tripped": "⊘",
    "final": "✔",
    "raw": "?",
    "plan": "☰",
    "reflection": "✎",
    "": " ",
}
GUTTER = {"": "  ", "on": "● ", "off": "○ "}
# The gutter's second cell: a step edited in this fork, or one a fork branches off.
FORK_MARKS = {"edited": "✎", "branch": "⑂"}
ROW_CACHE_SIZE = 4096
TOOL_WIDTH = 11
SUMMARY_CHARS = 200


@dataclass(frozen=True)
class Row:
    """What the timeline shows for one step."""

    marker: str
    tool: str
    summary: str
    unknown_tool: bool

    @classmethod
    def from_record(cls, record: StepRecord) -> Row:
        marker = record.marker()
        if record.answer is not None:
            return cls(marker, "answer", one_line(record.answer, 200), False)
        if record.reflection is not None:
            return cls(marker, "(reflect)", one_line(record.reflection.text, 200), False)
        if record.plan is not None:
            items = record.plan.items
            shown = ", ".join(_plan_item_tool(item) for item in items[:8]) + (", …" if len(items) > 8 else "")
            revision = f"replan {record.plan.revision - 1}: " if record.plan.revision > 1 else ""
            return cls(marker, "(plan)", one_line(f"{revision}{len(items)} items: {shown}", SUMMARY_CHARS), False)
        if len(record.calls) > 1:  # one turn, several calls: one row
            calls = record.calls
            shown = " · ".join(f"{'✗' if call.failed else ''}{one_line(call.tool, 40)}({_args_summary(call.args)})"
                               for call in calls[:8])
            return cls(marker, f"{len(calls)} calls", one_line(shown, SUMMARY_CHARS),
                       any(call.error_kind == "unknown_tool" for call in calls))
        if record.tool is not None:
            summary = _args_summary(record.args)
            if record.item:
                summary = f"#{record.item} {summary}"  # the plan item it carried out
            return cls(marker, one_line(record.tool, 60), one_line(summary, SUMMARY_CHARS),
                       record.error_kind == "unknown_tool")
        if record.parse_error is not None:
            return cls(marker, "(parse)", one_line(record.parse_error, 200), False)
        if record.tripped is not None:
            return cls(marker, "(guard)", one_line(record.tripped.message, 200), False)
        if record.error is not None:
            return cls(marker, "(error)", one_line(record.error, 200), False)
        if record.raw:
            return cls(marker, "(raw)", one_line(record.raw[0].note or record.raw[0].source, 200), False)
        return cls(marker, "", one_line(record.thought, 200), False)


def _args_summary(args) -> str:
    if isinstance(args, dict):
        parts = []
        for key, value in args.items():  # as many as the row can show, of however many
            parts.append(f"{one_line(key, 40)}={one_line(value, 40)}")
            if len(parts) * 3 > SUMMARY_CHARS:
                parts.append("…")
                break
        return ", ".join(parts)
    return "" if args is None else args if isinstance(args, str) else str(args)


def _plan_item_tool(item) -> str:
    """The tool an item (a call as written) names: ``calc[5 - 3]`` -> ``calc``."""
    text = one_line(item, 60)
    for stop in ("[", "(", ":"):
        text = text.split(stop, 1)[0]
    return text.strip() or "?"


class Timeline(ScrollView, can_focus=True):
    """Steps of the run; the current one highlighted, breakpoints in the gutter."""

    COMPONENT_CLASSES = {
        "timeline--cursor",
        "timeline--number",
        "timeline--tool",
        "timeline--unknown",
        "timeline--summary",
        "timeline--breakpoint",
        "timeline--breakpoint-off",
        "timeline--error",
        "timeline--repeat",
        "timeline--tripped",
        "timeline--final",
        "timeline--raw",
        "timeline--fork",
        "timeline--plan",
        "timeline--reflection",
    }
    DEFAULT_CSS = """
    Timeline {
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
    }
    """
    BINDINGS = [
        Binding("up,k", "app.step_back", "Back", show=False, id="timeline.up"),
        Binding("down,j", "app.step_forward", "Step", show=False, id="timeline.down"),
        Binding("home", "app.first_step", show=False),
        Binding("end", "app.last_step", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="timeline.page_down"),
    ]

    class Selected(Message):
        """The user clicked a step."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, *, id: str | None = None, classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.run = None
        self.cursor = 0
        self.step_count = 0
        self.breakpoint_marker: Callable[[int], str] = lambda step: ""
        self.fork_marks: dict[int, str] = {}
        self._rows: LRUCache[int, Row] = LRUCache(ROW_CACHE_SIZE)
        self._styles: dict[str, Style] = {}
        self._strips: LRUCache[tuple[int, bool, int], Strip] = LRUCache(ROW_CACHE_SIZE)  # painted rows
        self.view = None  # a view filter's steps (StepView): only those rows are shown

    # --- what is shown -------------------------------------------------------------
    def show_run(self, run, marker: Callable[[int], str] | None = None, view=None) -> None:
        self.run = run
        self.breakpoint_marker = marker or (lambda step: "")
        self.view = view
        self.fork_marks = {}
        self._rows.clear()
        self._strips.clear()
        self.cursor = 0
        self.set_step_count(run.step_count if run is not None else 0)
        self.scroll_to(y=0, animate=False, immediate=True, force=True)
        self.refresh()

    def set_fork_marks(self, marks: dict[int, str]) -> None:
        if marks != self.fork_marks:
            self.fork_marks = dict(marks)
            self._strips.clear()
            self.refresh()


    def set_view(self, view) -> None:
        """Show only the steps of ``view`` (a ``StepView``), or every step (None)."""
        self.view = view
        self._strips.clear()
        self.set_step_count(self.step_count, force=True)
        self.scroll_to_step(self.cursor)

    @property
    def row_count(self) -> int:
        return len(self.view) if self.view is not None else self.step_count

    def step_at(self, row: int) -> int | None:
        """The step shown on row ``row`` (0-based), None past the last."""
        if not 0 <= row < self.row_count:
            return None
        return self.view[row] if self.view is not None else row + 1

    def row_of(self, step: int) -> int:
        return self.view.row_of(step) if self.view is not None else step - 1

    def set_step_count(self, count: int, force: bool = False) -> None:
        if force or count != self.step_count or self.virtual_size.height != self.row_count:
            digits_changed = len(str(count)) != len(str(self.step_count))
            self.step_count = count
            set_virtual_size(self, Size(self.size.width, self.row_count))
            if digits_changed:
                self._strips.clear()
            self.refresh()

    def set_cursor(self, step: int) -> None:
        old = self.cursor
        self.cursor = step
        self._refresh_step(old)
        self._refresh_step(step)
        self.scroll_to_step(step)

    def forget_from(self, step: int) -> None:
        """Rows from ``step`` on are read again (a run still being written: its newest
        step may have grown)."""
        for number in [n for n in self._rows.keys() if n >= step]:
            self._rows.discard(number)
        for key in [k for k in self._strips.keys() if k[0] >= step]:
            self._strips.discard(key)
        self.refresh()

    def refresh_gutter(self) -> None:
        self._strips.clear()
        self.refresh()

    def scroll_to_step(self, step: int) -> None:
        row = self.row_of(step)
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_offset.y)
        if row < top or row >= top + height:
            # A jump lands mid-screen; a single step just keeps the row in view.
            if row == top - 1:
                target = row
            elif row == top + height:
                target = row - height + 1
            else:
                target = row - height // 2
            self.scroll_to(y=max(target, 0), animate=False, immediate=True, force=True)

    def _refresh_step(self, step: int) -> None:
        y = self.row_of(step) - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def row(self, step: int) -> Row | None:
        """The row for ``step``, read once and cached (None when not readable yet)."""
        cached = self._rows.get(step)
        if cached is not None:
            return cached
        if self.run is None:
            return None
        try:
            record = self.run.record(step)
        except (IndexError, ValueError, OSError):
            return None
        row = Row.from_record(record)
        self._rows.set(step, row)
        return row

    def row_text(self, step: int) -> str:
        """The row as plain text (what a test or a screen reader would read)."""
        return self._render_row(step, 80).text

    # --- painting --------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()
        self._strips.clear()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"timeline--{name}", partial=True)
        return style

    def render_line(self, y: int) -> Strip:
        step = self.step_at(y + int(self.scroll_offset.y))
        width = self.size.width
        base = self.rich_style
        if step is None or step > self.step_count:
            return Strip.blank(width, base)
        key = (step, step == self.cursor, width)
        strip = self._strips.get(key)
        if strip is None:  # the least recently painted rows go first, not the oldest
            strip = self._render_row(step, width).apply_style(base)
            self._strips.set(key, strip)
        return strip

    def _render_row(self, step: int, width: int) -> Strip:
        number_width = max(len(str(self.step_count)), 3)
        current = step == self.cursor
        gutter = self.breakpoint_marker(step)
        fork = FORK_MARKS.get(self.fork_marks.get(step, ""))
        gutter_style = self._style("breakpoint" if gutter == "on" else "breakpoint-off")
        segments = [
            Segment(GUTTER.get(gutter, "  "), gutter_style) if not fork
            else Segment(GUTTER.get(gutter, "  ")[0], gutter_style),
            Segment("▶" if current else " ", self._style("cursor") if current else Style()),
            Segment(f"{step:>{number_width}} ", self._style("number")),
        ]
        if fork:
            segments.insert(1, Segment(fork, self._style("fork")))
        row = self.row(step)
        if row is None:
            segments.append(Segment("  …", self._style("summary")))
        else:
            glyph = MARKERS.get(row.marker, " ")
            marker_style = self._style(row.marker) if row.marker else Style()
            segments.append(Segment(glyph + " ", marker_style))
            tool = row.tool[:TOOL_WIDTH].ljust(TOOL_WIDTH)
            segments.append(Segment(tool, self._style("unknown" if row.unknown_tool else "tool")))
            segments.append(Segment(" " + row.summary, self._style("summary")))
        strip = Strip(segments).crop_extend(0, width, None)
        if current:
            strip = strip.apply_style(self._style("cursor"))
        return strip

    # --- input --------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        step = self.step_at(offset.y + int(self.scroll_offset.y))
        if step is not None and 1 <= step <= self.step_count:
            self.post_message(self.Selected(step))

    def action_page(self, direction: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        if not self.row_count:
            return
        row = max(0, min(self.row_of(self.cursor) + direction * height, self.row_count - 1))
        target = self.step_at(row)
        if target is not None:
            self.post_message(self.Selected(target))
