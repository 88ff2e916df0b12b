"""The debugger on plans, reflections and turns of several calls (pilot tests)."""

from __future__ import annotations

from test_tui_support import SIZE, live_app, pane_text, press, recorded_document, settle, status

from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.widgets.timeline import Timeline


async def goto(pilot, step: int) -> None:
    await press(pilot, "g")
    await pilot.press(*str(step), "enter")
    await settle(pilot)


async def test_the_plan_shows_in_the_scratchpad_with_the_current_item_and_the_failed_one():
    app = DebuggerApp(recorded_document("kv_tax_replan.toml"), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, 2)
        assert app.session.cursor == 2
        scratchpad = pane_text(app, "scratchpad")
        assert "Plan (written at step 1):" in scratchpad
        assert "▶ 1. kv_set({'key': 'base', 'value': '120'}) ← this step" in scratchpad
        assert "› 2. calculator({'expr': '120 * 15%'}) ← next" in scratchpad
        await press(pilot, "n")
        scratchpad = pane_text(app, "scratchpad")
        assert "✓ 1. kv_set" in scratchpad and "✗ 2. calculator({'expr': '120 * 15%'}) ← failed here" in scratchpad
        assert "– 3. kv_set({'key': 'tax', 'value': '18.0'})" in scratchpad  # dropped: never run
        timeline = app.query_one(Timeline)
        assert "☰" in timeline.row_text(1) and "(plan)" in timeline.row_text(1) and "5 items" in timeline.row_text(1)
        assert "✗" in timeline.row_text(3) and "#2 expr=120 * 15%" in timeline.row_text(3)
        assert "✎" in timeline.row_text(4) and "(reflect)" in timeline.row_text(4)
        assert "replan 1: 3 items" in timeline.row_text(5)
        await press(pilot, "n")
        assert "Reflection: The calculator takes plain numbers" in pane_text(app, "scratchpad")
        assert "Plan (" not in pane_text(app, "scratchpad").split("▶ Step 4")[1]  # a reflection is in no plan


async def test_continue_on_a_live_plan_stops_at_the_failed_item_then_runs_to_the_answer(tmp_path):
    app = live_app(tmp_path, "kv_tax_replan.toml", save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert app.session.cursor == 3 and "tool error (plan item 2 failed): ValueError" in status(app)
        await press(pilot, "c")
        assert app.session.cursor == 9 and "final answer" in status(app)
        assert app.session.run.state_at(9).policy_calls == 4


async def test_a_filter_breakpoint_on_reflections_stops_there(tmp_path):
    app = live_app(tmp_path, "library_reflexion.toml", save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.session.breakpoints.add("filter", "~reflection")
        await press(pilot, "c")
        assert app.session.cursor == 1  # the tool error stops first
        await press(pilot, "c")
        assert app.session.cursor == 2 and "~reflection" in status(app)


async def test_a_turn_of_several_calls_is_one_row_and_the_tools_pane_points_at_each_tool():
    app = DebuggerApp(recorded_document("kv_parallel.toml"), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, 1)
        timeline = app.query_one(Timeline)
        assert app.session.cursor == 1 and app.session.run.step_count == 4
        assert "2 calls" in timeline.row_text(1) and "kv_set(key=base, value=120) · calculator" in timeline.row_text(1)
        tools = pane_text(app, "tools")
        assert "▶ calculator" in tools and "▶ kv_set" in tools and "▶ kv_get" not in tools
        await goto(pilot, 3)
        assert app.session.cursor == 3
        assert "✗" in timeline.row_text(3) and "✗kv_get(key=total)" in timeline.row_text(3)
        assert "kv_get(key: str) 3× 1✗" in pane_text(app, "tools")
        scratchpad = pane_text(app, "scratchpad").split("▶ Step 3")[1]
        assert scratchpad.count("Action: kv_get") == 3
        assert "Observation: 120 Observation: 18.0 Observation: ERROR: KeyError: 'total'" in scratchpad
