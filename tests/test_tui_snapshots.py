"""SVG snapshots of the debugger's main screen at telling moments (fixed size, no clock,
no paths). Regenerate with ``pytest --snapshot-update`` and look at the pictures."""

from __future__ import annotations

from live_support import SlowWriter, until
from test_tui_support import PLANS, SIZE, demo_app, keys, press

from agentdbg.documents import open_document
from agentdbg.tui.app import DebuggerApp


def live(name: str) -> DebuggerApp:
    return DebuggerApp(open_document(PLANS / name), save_breakpoints=False)


def test_demo_stopped_at_the_unknown_tool(snap_compare):
    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=keys("c"))


def test_demo_at_the_final_answer(snap_compare):
    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=keys("c", "c"))


def test_stuck_run_stopped_by_the_repeat(snap_compare):
    assert snap_compare(live("library_stuck.toml"), terminal_size=SIZE, run_before=keys("c"))


def test_memory_tiers_when_recall_brings_back_step_one(snap_compare):
    assert snap_compare(live("memory_research.toml"), terminal_size=SIZE,
                        run_before=keys("g", "type:14", "enter"))


def test_help_screen(snap_compare):
    assert snap_compare(demo_app(), terminal_size=SIZE, run_before=keys("question_mark"))


def test_a_run_being_written_followed_at_80x24(snap_compare, tmp_path):
    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        writer.step(2)
        app = DebuggerApp(open_document(path), save_breakpoints=False)

        async def run_before(pilot) -> None:
            await until(pilot, lambda: app.session is not None and app.session.run.step_count == 2, what="step 2")
            await press(pilot, "end")

        assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
        writer.finish()


def test_a_plan_item_that_failed_shown_against_its_plan(snap_compare):
    assert snap_compare(live("kv_tax_replan.toml"), terminal_size=SIZE, run_before=keys("c"))


def test_a_turn_of_several_calls_one_failing(snap_compare):
    assert snap_compare(live("kv_parallel.toml"), terminal_size=SIZE, run_before=keys("c"))
