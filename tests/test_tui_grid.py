"""The grid world in the debugger: a grid plan opens live, steps forward and back, and the
scratchpad shows each step's view of the grid as drawn text."""

from __future__ import annotations

import shutil

from test_tui_snapshots import keys
from test_tui_support import PLANS, press, settle, status

from agentdbg.documents import open_document
from agentdbg.plans import load_plan
from agentdbg.tui.app import DebuggerApp

PLAN = PLANS / "grid" / "memory.toml"


def grid_app(tmp_path) -> DebuggerApp:
    target = tmp_path / "memory.toml"  # breakpoint files are saved beside what is opened
    shutil.copy(PLAN, target)
    return DebuggerApp(open_document(target))


def scratchpad_lines(app) -> list[str]:
    return [line.rstrip() for line in app.query_one("#scratchpad").line_texts]


def current_step(app) -> list[str]:
    """The scratchpad's lines from the current step's rule on."""
    lines = scratchpad_lines(app)
    rule = next(i for i, line in enumerate(lines) if line.startswith("▶ Step"))
    return lines[rule:]


async def test_a_grid_plan_steps_forward_and_back_with_the_grid_drawn(tmp_path):
    steps = load_plan(PLAN).run().steps
    app = grid_app(tmp_path)
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        lines = scratchpad_lines(app)
        assert lines[0] == "Task: Walk from S to G."
        assert "0 @ . # . . . . ." in lines  # the first view, in the task
        await press(pilot, "n", "n", "n")
        assert app.session.cursor == 3
        shown = current_step(app)
        assert shown[0].startswith("▶ Step 3")
        view = steps[2].observation.splitlines()
        status_line, grid = view[0], view[1:]
        assert " ".join(" ".join(shown).split()).count(f"Observation: {status_line}") == 1  # wrapped to the pane
        top = shown.index(grid[0])
        assert shown[top:top + 9] == grid  # the grid, row by row, as the tool drew it
        assert grid[3] == "2 . @ . . . . . ." and grid[2] == "1 . + # . # # . ."
        await press(pilot, "p")
        assert app.session.cursor == 2
        shown = current_step(app)
        assert shown[0].startswith("▶ Step 2")
        assert "2 . @ . . . . . ." not in shown and "1 . @ # . # # . ." in shown
        await press(pilot, "c")
        assert app.session.cursor == 35
        assert "reached the goal (7, 7) in 34 moves" in status(app)


def test_a_backtracking_step_at_80x24(snap_compare):
    app = DebuggerApp(open_document(PLAN), save_breakpoints=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=keys("g", "type:19", "enter"))
