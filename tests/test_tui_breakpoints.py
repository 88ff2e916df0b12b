"""The breakpoint manager (B) with many breakpoints, and the breakpoints file as the
debugger reads and saves it: files it cannot read are kept, links are never followed."""

from __future__ import annotations

from test_tui_support import SIZE, demo_app, press, settle

from agentdbg.tui.widgets.breakpoint_list import BreakpointList

MANY = 50_000


async def test_the_manager_opens_at_once_with_many_breakpoints_and_edits_them():
    app = demo_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n", "n")
        for step in range(1, MANY + 1):
            app.breakpoints.add("step", step)
        app.breakpoints.add("tool", "calc")
        await press(pilot, "B")
        listing = app.screen.query_one(BreakpointList)
        # One widget paints the rows on screen: none is mounted per breakpoint.
        assert len(app.screen.query("*")) < 60
        assert listing.row_count == MANY + 1
        assert "(50,001)" in str(app.screen.query_one("#bp-title").render())
        assert listing.cursor == 1 and listing.row_text(1).split()[:3] == ["●", "step", "2"]  # the current step's
        listing.focus()
        await press(pilot, "end")
        assert listing.cursor == MANY and listing.row_text(MANY).split()[:3] == ["●", "tool", "calc"]
        await press(pilot, "space")
        assert not app.breakpoints[MANY].enabled and listing.row_text(MANY).startswith(" ○")
        await press(pilot, "pageup")
        assert 0 < listing.cursor < MANY
        await press(pilot, "home", "d")
        assert listing.row_count == MANY and not app.breakpoints.has_step(1)
        assert listing.row_text(0).split()[:3] == ["●", "step", "2"]
        # Remove all asks first: one press only asks, the second removes.
        await pilot.click("#bp-clear")
        await settle(pilot)
        assert len(app.breakpoints) == MANY and "Press again" in str(app.screen.query_one("#bp-clear").label)
        await pilot.pause(0.3)  # a button ignores a click while it shows the last one
        await pilot.click("#bp-clear")
        await settle(pilot)
        assert len(app.breakpoints) == 0 and listing.row_count == 0 and listing.selected() is None
        await press(pilot, "space", "d")  # nothing selected: nothing happens
        await press(pilot, "escape")
        assert not app.query_one("#timeline").row_text(2).startswith("●")
