"""W in the debugger: "what if" other guards had watched the open run. The dialog re-scores
it from its recorded steps, says where it would have stopped and what that would have
meant, and goes to that step."""

from __future__ import annotations

from test_tui_hostile import assert_safe
from test_tui_support import SIZE, recorded_document, screen_text, settle, type_text
from textual.widgets import Button, Input

from agentdbg.importers.builder import RunBuilder
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.screens.help import help_text
from agentdbg.tui.screens.whatif import WhatIfScreen


def dialog_text(app) -> str:
    """The dialog's settings line and its result, whitespace collapsed."""
    screen = app.screen
    assert isinstance(screen, WhatIfScreen)
    return " ".join(f"{screen.recorded.describe()} {screen.shown.plain}".split())


async def open_dialog(pilot) -> WhatIfScreen:
    await pilot.press("W")
    await settle(pilot)
    assert isinstance(pilot.app.screen, WhatIfScreen)
    return pilot.app.screen


async def set_field(pilot, screen: WhatIfScreen, name: str, value: str) -> None:
    field = screen.query_one(f"#whatif-{name}", Input)
    field.focus()
    field.value = ""
    await type_text(pilot, value)


async def test_what_if_says_where_other_guards_stop_the_run_and_goes_there():
    app = DebuggerApp(recorded_document("library_runaway.toml"), save_breakpoints=False)  # no brake: 6 steps
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_dialog(pilot)
        # It opens on the run's own guards, re-scored: they stop it where it ended.
        assert screen.query_one("#whatif-max_steps", Input).value == "6"
        assert "This run was recorded with: max 6 steps" in screen_text(app)
        assert "would stop at step 6 of 6" in dialog_text(app) and "stops where it ended anyway" in dialog_text(app)
        await set_field(pilot, screen, "repeat", "2")
        await pilot.press("enter")
        await settle(pilot)
        shown = dialog_text(app)
        assert "With repeat brake any ×2 · max 6 steps:" in shown
        assert "would stop at step 2 of 6 (repetition: action repeated again: catalog[Il Gattopardo], before its " \
               "action ran)" in shown
        assert "saves 4 steps and 404 of 486 tokens: a good stop (the run was wrong or failed)" in shown
        go = screen.query_one("#whatif-goto", Button)
        assert not go.disabled and str(go.label) == "Go to step 2"
        assert app.session.cursor == 1  # nothing moved yet
        await pilot.click("#whatif-goto")
        await settle(pilot)
        assert not isinstance(app.screen, WhatIfScreen)
        assert app.session.cursor == 2
        # Asked again, it offers the settings asked last.
        screen = await open_dialog(pilot)
        assert screen.query_one("#whatif-repeat", Input).value == "2"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, WhatIfScreen) and app.session.cursor == 2


async def test_what_if_refuses_settings_the_engine_refuses_and_says_when_nothing_stops():
    app = DebuggerApp(recorded_document("library_good.toml"), save_breakpoints=False)  # answers at step 4
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_dialog(pilot)
        await set_field(pilot, screen, "repeat", "1")
        await pilot.press("enter")
        await settle(pilot)
        assert "repeat threshold must be at least 2, got 1" in dialog_text(app)
        assert screen.query_one("#whatif-goto", Button).disabled
        for name in ("max_steps", "repeat"):
            await set_field(pilot, screen, name, "")
        await pilot.press("enter")
        await settle(pilot)
        assert "no guard given: fill in at least one" in dialog_text(app)
        await set_field(pilot, screen, "max_steps", "4")
        await pilot.press("enter")
        await settle(pilot)
        assert "these guards let it through: it ends as recorded, after 4 steps" in dialog_text(app)
        assert screen.query_one("#whatif-goto", Button).disabled
        await set_field(pilot, screen, "max_steps", "3")
        await pilot.press("enter")
        await settle(pilot)
        assert "a false stop (the run was correct)" in dialog_text(app)


async def test_what_if_shows_a_hostile_action_harmlessly():
    hostile = "[red]x[/red]\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\u202eevil"
    builder = RunBuilder("task", name="hostile")
    for _ in range(2):
        builder.step(tool="search", args=hostile, call=f"search[{hostile}]", observation="o")
    document = Document("hostile", "trace", [EventRun(builder.build())])
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_dialog(pilot)
        await set_field(pilot, screen, "repeat", "2")
        await pilot.press("enter")
        await settle(pilot)
        text = assert_safe(app)
        assert "would stop at step 2 of 2" in dialog_text(app)
        assert "[red]x[/red]" in text and "<U+202E>" in text


def test_the_help_screen_lists_what_if():
    table = help_text()
    rows = [" ".join(str(cell) for cell in row) for row in zip(*(column._cells for column in table.columns),
                                                                 strict=True)]
    assert any(row.startswith("W what if:") for row in rows)
