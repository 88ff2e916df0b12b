"""The breakpoint manager: automatic breaks on/off, user breakpoints with hit counts,
enable / disable / remove, and adding a step, tool or filter breakpoint."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, DataTable, Input, Label, Select

from agentdbg.debugger.breakpoints import AUTO_BREAKS, BREAKPOINT_KINDS, BreakpointSet
from agentdbg.tui.safe import one_line

PLACEHOLDERS = {
    "step": "a step number, e.g. 12",
    "tool": "a tool name, e.g. calc",
    "filter": "e.g. ~tool calc & ~error   (? in the main screen lists the language)",
}


class BreakpointScreen(ModalScreen[None]):
    """Edits the ``BreakpointSet`` in place; the app saves and repaints on ``Changed``."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("space", "toggle_selected", "Enable/disable", show=False),
        Binding("delete,d", "remove_selected", "Remove", show=False),
    ]

    class Changed(Message):
        """The breakpoints were edited."""

    def __init__(self, breakpoints: BreakpointSet, current_step: int = 0, current_tool: str | None = None):
        super().__init__(id="breakpoints")
        self.breakpoints = breakpoints
        self.current_step = current_step
        self.current_tool = current_tool

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide") as box:
            box.border_title = "Breakpoints"
            box.border_subtitle = "space: enable/disable · d: remove · Esc: close"
            yield Label("Automatic breaks", classes="section")
            for code, text in AUTO_BREAKS.items():
                yield Checkbox(f"{code}: {text}", self.breakpoints.auto.get(code, True),
                               id=f"auto-{code}")
            yield Label("Your breakpoints", classes="section")
            table = DataTable(id="bp-table", cursor_type="row", zebra_stripes=True)
            table.add_columns("on", "kind", "where / condition", "hits", "ignore")
            yield table
            with Horizontal(id="bp-buttons"):
                yield Button("Enable/disable", id="bp-toggle")
                yield Button("Remove", id="bp-remove", variant="error")
            yield Label("Add a breakpoint", classes="section")
            with Horizontal(id="bp-add"):
                yield Select([(kind, kind) for kind in BREAKPOINT_KINDS], value="filter",
                             allow_blank=False, id="bp-kind")
                yield Input(placeholder=PLACEHOLDERS["filter"], id="bp-spec")
                yield Button("Add", id="bp-add-button", variant="primary")
            yield Label("", id="bp-error", classes="error", markup=False)

    def on_mount(self) -> None:
        self.fill_table()
        self.query_one("#bp-spec", Input).focus()

    def fill_table(self) -> None:
        table = self.query_one("#bp-table", DataTable)
        row = table.cursor_row
        table.clear()
        for index, bp in enumerate(self.breakpoints):
            table.add_row(
                Text("●" if bp.enabled else "○", style="bold red" if bp.enabled else "dim"),
                Text(bp.kind),
                Text(one_line(bp.spec, 60)),
                Text(str(bp.hits)),
                Text(str(bp.ignore)),
                key=str(index),
            )
        if table.row_count:
            table.move_cursor(row=min(max(row, 0), table.row_count - 1))

    def selected(self):
        table = self.query_one("#bp-table", DataTable)
        items = list(self.breakpoints)
        if not items or table.cursor_row < 0 or table.cursor_row >= len(items):
            return None
        return items[table.cursor_row]

    @on(Checkbox.Changed)
    def auto_changed(self, event: Checkbox.Changed) -> None:
        code = (event.checkbox.id or "").removeprefix("auto-")
        if code in AUTO_BREAKS and self.breakpoints.auto.get(code, True) != event.value:
            self.breakpoints.toggle_auto(code)
            self.post_message(self.Changed())

    @on(Select.Changed, "#bp-kind")
    def kind_changed(self, event: Select.Changed) -> None:
        spec = self.query_one("#bp-spec", Input)
        spec.placeholder = PLACEHOLDERS.get(str(event.value), "")
        if not spec.value:
            if event.value == "step" and self.current_step:
                spec.value = str(self.current_step)
            elif event.value == "tool" and self.current_tool:
                spec.value = self.current_tool

    @on(Input.Submitted, "#bp-spec")
    @on(Button.Pressed, "#bp-add-button")
    def add(self) -> None:
        kind = str(self.query_one("#bp-kind", Select).value)
        spec_input = self.query_one("#bp-spec", Input)
        error = self.query_one("#bp-error", Label)
        try:
            self.breakpoints.add(kind, spec_input.value)
        except ValueError as exc:
            error.update(f"✗ {one_line(str(exc), 300)}")
            return
        error.update("")
        spec_input.value = ""
        self.fill_table()
        self.post_message(self.Changed())

    @on(Button.Pressed, "#bp-toggle")
    def action_toggle_selected(self) -> None:
        bp = self.selected()
        if bp is not None:
            self.breakpoints.toggle(bp)
            self.fill_table()
            self.post_message(self.Changed())

    @on(Button.Pressed, "#bp-remove")
    def action_remove_selected(self) -> None:
        bp = self.selected()
        if bp is not None:
            self.breakpoints.remove(bp)
            self.fill_table()
            self.post_message(self.Changed())
