"""The split view of two runs: aligned timelines side by side with one cursor, and under
each the step it points at, its fields that differ from the other side marked.

Rows come from ``agentdbg.diff``'s alignment (gaps where one side has no step); only the
rows on screen are read, through the Line API, so a long run costs what the visible rows
cost. In a narrow terminal one side is shown at a time (``s`` shows the other).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.cache import LRUCache
from textual.containers import Horizontal, Vertical
from textual.geometry import Region, Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Static

from agentdbg.diff import (
    CHANGED,
    EQUAL,
    FIELDS,
    ONLY_A,
    ONLY_B,
    Row,
    RunDiff,
    differ_phrase,
    differing_fields,
    field_text,
    state_lines,
    step_label,
)
from agentdbg.model.outcome import run_outcome
from agentdbg.text import plural
from agentdbg.tui import commands
from agentdbg.tui.safe import clipped, one_line, plain
from agentdbg.tui.widgets.lines import LinePane, Paragraph, set_virtual_size

SIGNS = {EQUAL: "=", CHANGED: "~", ONLY_A: "-", ONLY_B: "+"}
KIND_STYLES = {EQUAL: "dim", CHANGED: "bold yellow", ONLY_A: "bold red", ONLY_B: "bold green"}
NARROW = 110  # below this many columns one side is shown at a time
ROW_CACHE = 2048
TEXT_CHARS = 20_000  # a step's text shown in the detail pane is cut beyond this
LABEL_FIELDS = {"Thought": "thought", "Action": "action", "Observation": "observation", "Error": "error",
                "Final Answer": "answer", "Approval": "approval"}
ALWAYS_SHOWN = ("error", "guards", "memory")  # a line of their own when they have something to say


@dataclass
class DiffCursor:
    """The one cursor both sides share: a row of the alignment."""

    row: int = 0


class AlignedTimeline(ScrollView, can_focus=True):
    """One side's steps, one row per aligned row; a gap where this side has no step."""

    COMPONENT_CLASSES = {"aligned--cursor", "aligned--number", "aligned--equal", "aligned--changed",
                         "aligned--only", "aligned--gap"}
    DEFAULT_CSS = """
    AlignedTimeline { overflow-x: hidden; overflow-y: scroll; scrollbar-size-vertical: 1; }
    """
    # The split view's keys, ahead of the scrolling a ScrollView binds to the same keys.
    BINDINGS = commands.bindings("diff", namespace="screen.")

    def __init__(self, result: RunDiff, side: str, cursor: DiffCursor, *, id: str | None = None,
                 classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.result = result
        self.side = side
        self.cursor = cursor
        self._labels: LRUCache[int, str] = LRUCache(ROW_CACHE)  # row -> its label
        self._styles: dict[str, Style] = {}
        alignment = result.alignment
        self._digits = max(len(str(alignment.steps_a)), len(str(alignment.steps_b)), 2)

    def on_mount(self) -> None:
        super().on_mount()
        set_virtual_size(self, Size(self.size.width, self.result.alignment.row_count))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        screen = self.screen if self.is_attached else None
        if isinstance(screen, DiffScreen):  # rows stay side by side (the mouse wheel moves one)
            screen.scrolled(self, new_value)

    def on_resize(self) -> None:
        set_virtual_size(self, Size(self.size.width, self.result.alignment.row_count))
        self.scroll_to_row(self.cursor.row)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"aligned--{name}", partial=True)
        return style

    def label(self, row: Row) -> str:
        step = row.a if self.side == "a" else row.b
        if step is None:
            return ""
        cached = self._labels.get(row.index)
        if cached is None:
            run = self.result.a if self.side == "a" else self.result.b
            try:
                cached = step_label(run.record(step))
            except (IndexError, ValueError, OSError):
                cached = "…"
            self._labels.set(row.index, cached)
        return cached

    def row_text(self, index: int) -> str:
        return self._render(index, 80).text.rstrip()

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        if index >= self.result.alignment.row_count:
            return Strip.blank(self.size.width, self.rich_style)
        return self._render(index, self.size.width).apply_style(self.rich_style)

    def _render(self, index: int, width: int) -> Strip:
        row = self.result.alignment.row(index)
        step = row.a if self.side == "a" else row.b
        current = index == self.cursor.row
        kind_style = {EQUAL: "equal", CHANGED: "changed", ONLY_A: "only", ONLY_B: "only"}[row.kind]
        segments = [Segment("▶" if current else " ", self._style("cursor") if current else Style()),
                    Segment(SIGNS[row.kind] + " ", self._style(kind_style))]
        if step is None:
            segments.append(Segment(" " * self._digits + " " + "·" * max(width - self._digits - 4, 0),
                                    self._style("gap")))
        else:
            segments.append(Segment(f"{step:>{self._digits}} ", self._style("number")))
            segments.append(Segment(self.label(row), self._style(kind_style) if row.kind != EQUAL else Style()))
        strip = Strip(segments).crop_extend(0, width, None)
        return strip.apply_style(self._style("cursor")) if current else strip

    def refresh_row(self, index: int) -> None:
        y = index - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def scroll_to_row(self, index: int) -> None:
        height = max(self.scrollable_content_region.height, 1)
        top = int(self.scroll_offset.y)
        if index < top or index >= top + height:
            target = index if index == top - 1 else index - height + 1 if index == top + height else index - height // 2
            self.scroll_to(y=max(target, 0), animate=False, immediate=True, force=True)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None:
            index = offset.y + int(self.scroll_offset.y)
            if 0 <= index < self.result.alignment.row_count and isinstance(self.screen, DiffScreen):
                self.screen.move_to(index)


class StepDetail(LinePane, can_focus=False):
    """The step of one side at the cursor, its differing fields marked, and the state there
    (not focusable: the keys move the cursor; the mouse wheel scrolls a long step)."""

    def __init__(self, result: RunDiff, side: str, cursor: DiffCursor, *, id: str | None = None,
                 classes: str | None = None):
        super().__init__(id=id, classes=classes)
        self.result = result
        self.side = side
        self.cursor = cursor

    def content_key(self) -> object:
        return self.cursor.row

    def build(self, width: int) -> list[Paragraph]:
        alignment = self.result.alignment
        if not alignment.row_count:
            return [Text("no steps on either side", style="dim")]
        row = alignment.row(self.cursor.row)
        record_a, record_b = self.result.records(row)
        mine, other = (record_a, record_b) if self.side == "a" else (record_b, record_a)
        differing = set(differing_fields(record_a, record_b)) if row.kind == CHANGED else set()
        letter = self.side.upper()
        out: list[Paragraph] = []
        if mine is None:
            at = row.a_at if self.side == "a" else row.b_at
            out.append(Text(f"{letter} has no step here: the other run's step {row.b if self.side == 'a' else row.a} "
                            f"has no counterpart ({letter} is after step {at})", style="italic"))
        else:
            title = Text(f"step {mine.step}", style="bold")
            title.append(f"  {row.kind}", style=KIND_STYLES[row.kind])
            out.append(title)
            shown = set()
            for label, text in mine.transcript():
                field = LABEL_FIELDS.get(label)
                marked = field in differing
                shown.add(field)
                head = Text(("≠ " if marked else "  ") + label + ": ", style="bold yellow" if marked else "bold")
                head.append_text(plain(clipped(text, TEXT_CHARS)))
                out.append((len(label) + 4, head))
            for field in FIELDS:  # what differs without a line of the transcript of its own
                always = field in ALWAYS_SHOWN
                if field in shown or not (always or field in differing):
                    continue
                text = field_text(mine, field)
                if field not in differing and text.startswith("(no"):
                    continue
                marked = field in differing
                out.append((len(field) + 4, Text.assemble((("≠ " if marked else "  ") + f"{field}: ",
                                                           "bold yellow" if marked else "dim"),
                                                          plain(clipped(text, TEXT_CHARS)))))
            if row.kind == CHANGED and differing and other is not None:
                out.append(Text("differs: " + ", ".join(name for name in FIELDS if name in differing),
                                style="yellow"))
        state_a, state_b = self.result.state_pair(row)
        mine_state, other_state = (state_a, state_b) if self.side == "a" else (state_b, state_a)
        out.append(Text(""))
        out.append(Text("state here", style="bold"))
        lines, others = state_lines(mine_state), state_lines(other_state)
        for name, line in lines.items():
            marked = line != others[name]
            out.append((12, Text.assemble((("≠ " if marked else "  ") + f"{name}: ", "bold yellow" if marked else "dim"),
                                          plain(line))))
        return out


def run_summary(run) -> str:
    """``5 steps · answered: 2``: how long a run is and how it ended, on one line."""
    end = run.end
    answer = f": {one_line(end.answer, 40)}" if end is not None and end.answer is not None else ""
    return f"{plural(run.step_count, 'step')} · {one_line(run_outcome(run), 40)}{answer}"


class DiffScreen(ModalScreen[int | None]):
    """Two runs side by side; dismissed with the step of A to go to (or None)."""

    BINDINGS = commands.bindings("diff")

    def __init__(self, result: RunDiff, label_a: str, label_b: str, step_a: int = 0):
        """Opens on the first difference; on A's step ``step_a`` when there is none."""
        super().__init__(id="diff")
        self.result = result
        self.labels = (label_a, label_b)
        first = result.alignment.first_difference
        if first is None:
            first = result.alignment.row_of_step("a", step_a) if step_a else 0
        self.cursor = DiffCursor(first or 0)
        self.shown_side = "a"  # in a narrow terminal: the side on screen

    def compose(self) -> ComposeResult:
        yield Static(self._header(), id="diff-header", markup=False)
        with Horizontal(id="diff-main"):
            for side in ("a", "b"):
                with Vertical(id=f"diff-{side}", classes="diff-side"):
                    yield AlignedTimeline(self.result, side, self.cursor, id=f"diff-list-{side}", classes="pane")
                    yield StepDetail(self.result, side, self.cursor, id=f"diff-detail-{side}", classes="pane")
        yield Static("", id="diff-status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        for side, label in zip("ab", self.labels, strict=True):
            # (a title given as a string would be read as markup: a run's name is untrusted)
            self.query_one(f"#diff-list-{side}").border_title = Text(f"{side.upper()}: {one_line(label, 60)}")
            run = self.result.a if side == "a" else self.result.b
            self.query_one(f"#diff-list-{side}").border_subtitle = Text(run_summary(run))
            self.query_one(f"#diff-detail-{side}").border_title = f"{side.upper()} at the cursor"
        self.query_one("#diff-list-a").focus()
        self._layout(self.size.width)
        self.show_cursor()

    def on_resize(self, event: events.Resize) -> None:
        self._layout(event.size.width)

    @property
    def narrow(self) -> bool:
        return self.size.width < NARROW

    def _layout(self, width: int) -> None:
        narrow = width < NARROW
        for side in "ab":
            self.query_one(f"#diff-{side}").display = not narrow or side == self.shown_side
        focused = self.focused
        if narrow and (focused is None or not focused.id or not focused.id.endswith(self.shown_side)):
            self.query_one(f"#diff-list-{self.shown_side}").focus()

    def _header(self) -> Text:
        result = self.result
        counts = result.alignment.counts()
        text = Text()
        if result.identical:
            text.append("the runs are the same", style="bold green")
            text.append(f": {plural(counts[EQUAL], 'step')} equal" if counts[EQUAL] else ": neither has a step")
        else:
            text.append("the runs differ", style="bold red")
            text.append(": " + ", ".join(f"{counts[k]:,} {k}" for k in (EQUAL, CHANGED, ONLY_A, ONLY_B) if counts[k]))
            if result.run_fields:
                text.append(f"; {differ_phrase(result.run_fields)}")
        return text

    def scrolled(self, timeline: AlignedTimeline, y: float) -> None:
        other = self.query_one(f"#diff-list-{'b' if timeline.side == 'a' else 'a'}", AlignedTimeline)
        if other.display and round(other.scroll_y) != round(y):
            other.scroll_to(y=y, animate=False, immediate=True, force=True)

    # --- the cursor ------------------------------------------------------------------------
    def move_to(self, index: int) -> None:
        count = self.result.alignment.row_count
        if not count:
            return
        old = self.cursor.row
        self.cursor.row = max(0, min(index, count - 1))
        for side in "ab":
            timeline = self.query_one(f"#diff-list-{side}", AlignedTimeline)
            timeline.refresh_row(old)
            timeline.refresh_row(self.cursor.row)
        self.show_cursor()

    def show_cursor(self) -> None:
        alignment = self.result.alignment
        for side in "ab":
            self.query_one(f"#diff-list-{side}", AlignedTimeline).scroll_to_row(self.cursor.row)
            self.query_one(f"#diff-detail-{side}", StepDetail).rebuild()
        self.query_one("#diff-status", Static).update(self.status_text())
        if alignment.row_count:
            self.query_one("#diff-detail-a").scroll_home(animate=False)
            self.query_one("#diff-detail-b").scroll_home(animate=False)

    def status_text(self) -> Text:
        alignment = self.result.alignment
        if not alignment.row_count:
            return Text("no steps on either side")
        row = alignment.row(self.cursor.row)
        where = f"row {row.index + 1:,}/{alignment.row_count:,}"
        sides = f"A {row.a if row.a is not None else '—'} · B {row.b if row.b is not None else '—'}"
        text = Text(f"{where} · {sides} · ")
        text.append(row.kind, style=KIND_STYLES[row.kind])
        if row.kind == CHANGED:
            text.append(f" ({', '.join(differing_fields(*self.result.records(row)))})", style="yellow")
        hunks = len(alignment.hunks)
        if hunks:
            text.append(f" · {hunks:,} difference{'s' if hunks != 1 else ''}", style="dim")
        if self.narrow:
            text.append(f" · {self.shown_side.upper()} shown", style="dim")
        return text

    @property
    def row(self) -> int:
        return self.cursor.row

    # --- actions -------------------------------------------------------------------------------
    def action_row(self, delta: int) -> None:
        self.move_to(self.cursor.row + delta)

    def action_page(self, direction: int) -> None:
        height = self.query_one(f"#diff-list-{self.shown_side}", AlignedTimeline).scrollable_content_region.height
        self.move_to(self.cursor.row + direction * max(height - 1, 1))

    def action_first_row(self) -> None:
        self.move_to(0)

    def action_last_row(self) -> None:
        self.move_to(self.result.alignment.row_count - 1)

    def action_difference(self, forward: bool) -> None:
        target = self.result.alignment.next_difference(self.cursor.row, forward)
        if target is None:
            where = "after" if forward else "before"
            self.notify(f"no difference {where} this row", timeout=3)
            return
        self.move_to(target)

    def action_other_side(self) -> None:
        self.shown_side = "b" if self.shown_side == "a" else "a"
        if self.narrow:
            self._layout(self.size.width)
        self.query_one(f"#diff-list-{self.shown_side}").focus()
        self.query_one("#diff-status", Static).update(self.status_text())

    def action_go_there(self) -> None:
        alignment = self.result.alignment
        if not alignment.row_count:
            self.dismiss(None)
            return
        row = alignment.row(self.cursor.row)
        self.dismiss(row.a_at)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        from agentdbg.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())



__all__ = ["AlignedTimeline", "DiffScreen", "StepDetail"]
