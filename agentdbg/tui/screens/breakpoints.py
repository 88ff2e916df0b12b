"""The breakpoint manager: automatic breaks on/off, user breakpoints with hit counts,
enable / disable / remove, and adding a step, tool or filter breakpoint. The list is a
virtual one (``BreakpointList``): as quick with 100,000 breakpoints as with three."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select

from agentdbg.debugger.breakpoints import AUTO_BREAKS, BREAKPOINT_KINDS, BreakpointSet
from agentdbg.tui.safe import one_line
from agentdbg.tui.widgets.breakpoint_list import BreakpointList

PLACEHOLDERS = {
    "step": "a step number, e.g. 12",
    "tool": "a tool name, e.g. calc",
    "filter": "e.g. ~tool calc & ~error   (? in the main screen lists the language)",
}


class BreakpointScreen(ModalScreen[None]):
    """Edits the ``BreakpointSet`` in place; the app saves and repaints on ``Changed``."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="breakpoints.close"),
        Binding("space", "toggle_selected", "Enable/disable", show=False, id="breakpoints.toggle"),
        Binding("delete,d", "remove_selected", "Remove", show=False, id="breakpoints.remove"),
    ]

    class Changed(Message):
        """The breakpoints were edited."""

    def __init__(self, breakpoints: BreakpointSet, current_step: int = 0, current_tool: str | None = None):
        super().__init__(id="breakpoints")
        self.breakpoints = breakpoints
        self.current_step = current_step
        self.current_tool = current_tool
        self._confirm_clear = False  # "Remove all" was pressed once

    def compose(self) -> ComposeResult:
        # Scrolls on a short terminal; what is typed into comes first, so it is in view.
        with VerticalScroll(classes="dialog wide") as box:
            box.border_title = "Breakpoints"
            box.border_subtitle = "space: enable/disable · d: remove · Esc: close"
            yield Label("Add a breakpoint", classes="section first")
            with Horizontal(id="bp-add"):
                yield Select([(kind, kind) for kind in BREAKPOINT_KINDS], value="filter",
                             allow_blank=False, id="bp-kind")
                yield Input(placeholder=PLACEHOLDERS["filter"], id="bp-spec")
                yield Button("Add", id="bp-add-button", variant="primary")
            yield Label("", id="bp-error", classes="error", markup=False)
            yield Label(self.list_title(), id="bp-title", classes="section")
            yield BreakpointList(self.breakpoints, id="bp-list")
            with Horizontal(id="bp-buttons"):
                yield Button("Enable/disable", id="bp-toggle")
                yield Button("Remove", id="bp-remove", variant="error")
                yield Button("Remove all", id="bp-clear", variant="error")
            yield Label("Automatic breaks", classes="section")
            for code, text in AUTO_BREAKS.items():
                yield Checkbox(f"{code}: {text}", self.breakpoints.auto.get(code, True),
                               id=f"auto-{code}")

    def on_mount(self) -> None:
        breakpoint_here = self.breakpoints.step_breakpoint(self.current_step)
        if breakpoint_here is not None:  # start on the current step's breakpoint
            self.query_one(BreakpointList).move_cursor(self.breakpoints.index(breakpoint_here))
        self.query_one("#bp-spec", Input).focus()

    def list_title(self) -> str:
        count = len(self.breakpoints)
        return f"Your breakpoints ({count:,})" if count else "Your breakpoints"

    def show_breakpoints(self) -> None:
        """Show the breakpoints as they are now (after an edit)."""
        self.query_one("#bp-title", Label).update(self.list_title())
        self.query_one(BreakpointList).refresh_rows()
        self.cancel_clear()

    def selected(self):
        return self.query_one(BreakpointList).selected()

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
                spec.value = one_line(self.current_tool)  # as shown: a tool breakpoint matches it

    @on(Input.Submitted, "#bp-spec")
    @on(Button.Pressed, "#bp-add-button")
    def add(self) -> None:
        kind = str(self.query_one("#bp-kind", Select).value)
        spec_input = self.query_one("#bp-spec", Input)
        error = self.query_one("#bp-error", Label)
        try:
            bp = self.breakpoints.add(kind, spec_input.value)
        except ValueError as exc:
            error.update(f"✗ {one_line(str(exc), 300)}")
            return
        error.update("")
        spec_input.value = ""
        self.show_breakpoints()
        self.query_one(BreakpointList).move_cursor(self.breakpoints.index(bp))
        self.post_message(self.Changed())

    @on(Button.Pressed, "#bp-toggle")
    def action_toggle_selected(self) -> None:
        bp = self.selected()
        if bp is not None:
            self.breakpoints.toggle(bp)
            self.show_breakpoints()
            self.post_message(self.Changed())

    @on(Button.Pressed, "#bp-remove")
    def action_remove_selected(self) -> None:
        bp = self.selected()
        if bp is not None:
            self.breakpoints.remove(bp)
            self.show_breakpoints()
            self.post_message(self.Changed())

    @on(Button.Pressed, "#bp-clear")
    def remove_all(self) -> None:
        """Remove every breakpoint, on a second press (the first one asks)."""
        button = self.query_one("#bp-clear", Button)
        if not self.breakpoints:
            return
        if not self._confirm_clear:
            self._confirm_clear = True
            button.label = f"Remove all {len(self.breakpoints):,}? Press again"
            return
        self.breakpoints.clear()
        self.show_breakpoints()
        self.post_message(self.Changed())

    def cancel_clear(self) -> None:
        self._confirm_clear = False
        self.query_one("#bp-clear", Button).label = "Remove all"
