"""The help screen: every command with its keys, the automatic breaks and the filter
language, all generated from the registries that drive them."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from agentdbg.debugger.breakpoints import AUTO_BREAKS
from agentdbg.debugger.filters import FILTER_HELP
from agentdbg.tui.commands import COMMANDS, DIFF_COMMANDS, GROUPS, Command, key_name
from agentdbg.tui.screens.approval import APPROVAL_KEYS

GROUP_NOTES = {"Live": "(a trace still being written; its agent can be paused when it was recorded with attach)",
               "Diff": "(the split view of two runs, opened with D)"}


def shown_keys(command: Command, keymap: dict[str, str] | None = None) -> str:
    """The keys that run ``command`` now: the user's keymap, else its defaults."""
    keys = (keymap or {}).get(command.id)
    if keys is None:
        return command.shown_keys
    return " / ".join(key_name(key) for key in keys.split(","))


def help_text(keymap: dict[str, str] | None = None) -> Table:
    """Every command with the keys that run it now, and its binding id (for keymap.toml)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for group in GROUPS:
        table.add_row(Text(group, style="bold underline"), Text(GROUP_NOTES.get(group, ""), style="dim"))
        for command in (*COMMANDS, *DIFF_COMMANDS):
            if command.group == group:
                table.add_row(Text(shown_keys(command, keymap)),
                              Text.assemble(command.help, ("  " + command.id, "dim")))
        table.add_row("", "")
    table.add_row(Text("Mouse", style="bold underline"), "")
    table.add_row(Text("click"), Text("a timeline row: go to that step"))
    table.add_row(Text("wheel"), Text("scroll a pane"))
    table.add_row(Text("ctrl+p"), Text("command palette: every command above by name"))
    table.add_row("", "")
    table.add_row(Text("Dangerous calls", style="bold underline"),
                  Text("(a live plan's call to a dangerous tool waits in a dialog)", style="dim"))
    for keys, text in APPROVAL_KEYS:
        table.add_row(Text(keys), Text(text))
    table.add_row("", "")
    table.add_row(Text("Automatic breaks", style="bold underline"), Text("(B to turn each on or off)", style="dim"))
    for code, text in AUTO_BREAKS.items():
        table.add_row(Text(code), Text(text))
    table.add_row("", "")
    table.add_row(Text("Filters", style="bold underline"),
                  Text("conditions for breakpoints (B, kind filter)", style="dim"))
    for code, text in FILTER_HELP:
        table.add_row(Text(code), Text(text))
    table.add_row(Text("e.g."), Text("~tool calc & ~error    ~obs 'not found' | ~step >10    !(~tool search)"))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", key_display="Esc", id="help.close"),
    ]

    def __init__(self, keymap: dict[str, str] | None = None):
        super().__init__(id="help")
        self.keymap = keymap or {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body", classes="dialog") as body:
            body.border_title = "agentdbg keys"
            body.border_subtitle = "Esc closes · keys can be remapped: agentdbg keys"
            yield Static(help_text(self.keymap), id="help-text")
