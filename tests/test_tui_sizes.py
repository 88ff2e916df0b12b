"""SVG snapshots of the main screen and every dialog at 80x24, 120x40 and 200x60: each
pane and dialog usable down to a small terminal (the sidebar becomes tabs below 108
columns; dialogs never wider than the screen). Regenerate with ``pytest
--snapshot-update tests/test_tui_sizes.py`` and look at the pictures."""

from __future__ import annotations

import pytest
from test_tui_support import event_document, recorded_document
from test_tui_support import keys as support_keys

from agentdbg.tui.app import DebuggerApp

SIZES = [(80, 24), (120, 40), (200, 60)]
SIZE_IDS = ["80x24", "120x40", "200x60"]


def recorded() -> DebuggerApp:
    return DebuggerApp(recorded_document(), save_breakpoints=False)


def keys(*pressed: str):
    return support_keys(*pressed, then=steady_cursors)


def steady_cursors(app) -> None:
    """A text field's cursor shown, not blinking: the picture must not depend on when it
    was taken."""
    from textual.widgets import Input

    for field in app.screen.query(Input):
        field.cursor_blink = False


SCREENS = {
    "main": ("c", "c", "C"),  # stopped at the unknown tool, two stops in the log
    "memory_tab": ("c", "3"),  # the memory pane (a tab below 108 columns)
    "help": ("question_mark",),
    "breakpoints": ("b", "B"),
    "log": ("c", "c", "C", "e"),
    "goto": ("g",),
    "search": ("slash", "type:Gattopardo"),
    "search_found": ("slash", "type:Gattopardo", "enter", "full_stop"),
    "open": ("o", "ctrl+u"),
    "write": ("w",),
    "what_if": ("W",),
}


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen_at_size(snap_compare, monkeypatch, screen, size):
    monkeypatch.chdir("/")  # the write dialog shows the full path it would write
    assert snap_compare(recorded(), terminal_size=size, run_before=keys(*SCREENS[screen]))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_run_switcher_at_size(snap_compare, size):
    app = DebuggerApp(event_document("library_good.toml", "library_stuck.toml"), save_breakpoints=False)
    assert snap_compare(app, terminal_size=size, run_before=keys("r"))


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_approval_dialog_at_size(snap_compare, size):
    """A live plan's call to a dangerous tool: the dialog that asks."""
    from test_tui_approval import PLAN, step_to_the_first_deletion
    from test_tui_support import PLANS

    from agentdbg.documents import open_document

    app = DebuggerApp(open_document(PLANS / PLAN), save_breakpoints=False)

    async def run_before(pilot) -> None:
        await step_to_the_first_deletion(pilot)
        steady_cursors(pilot.app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
