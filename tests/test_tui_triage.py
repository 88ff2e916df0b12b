"""Triage in the debugger: `]` / `[` go to the next / previous failing run at its first
failing step; `f` narrows the timeline to the steps a filter keeps (n / p move between
them, an empty filter shows every step); `z` folds long observations."""

from __future__ import annotations

from test_tui_support import SIZE, press, settle, status, type_text

from agentdbg.debugger.triage import FAILING_CONDITIONS, Summaries
from agentdbg.importers.builder import RunBuilder
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp


def make_run(number: int, kind: str = "") -> EventRun:
    """A run of four steps; ``kind`` makes it fail: an error at step 3, a guard at step 4,
    or a wrong answer."""
    builder = RunBuilder(f"task {number}", name=f"case {number}")
    builder.step(thought="look", tool="search", args="a", call="search[a]", observation="found a")
    builder.step(thought="again", tool="lookup", args="b", call="lookup[b]", observation="found b")
    if kind == "error":
        builder.step(thought="oops", tool="calc", args="1/0", call="calc[1/0]", error_kind="exception",
                     error_message="division by zero")
    else:
        builder.step(thought="more", tool="search", args="c", call="search[c]", observation="found c")
    if kind == "guard":
        builder.step(thought="more", tool="search", args="c", call="search[c]", observation="found c")
        return EventRun(builder.build(outcome="budget exhausted", guard="max_steps", message="4 steps"))
    builder.step(thought="done", answer="2" if kind != "wrong" else "3")
    verdict = {"correct": kind != "wrong", "score": None, "expected": "2", "grader": "em"}
    return EventRun(builder.build(verdict=verdict))


def document() -> Document:
    kinds = ["", "error", "", "", "wrong", "guard", ""]
    return Document("runs", "trace", [make_run(i + 1, kind) for i, kind in enumerate(kinds)])


def test_failing_means_what_check_fails_on():
    from argparse import Namespace

    from agentdbg.cli.check import _check

    doc = document()
    summaries = Summaries(doc.runs)
    args = Namespace(run=None, max_runs=0, max_report=10)
    checked = _check(doc, list(FAILING_CONDITIONS), args)
    assert [bool(run["counts"]) for run in checked["runs"]] == [summaries.get(i).failing for i in range(7)]
    assert [summaries.get(i).failing for i in range(7)] == [False, True, False, False, True, True, False]


async def test_brackets_go_to_the_next_and_previous_failing_run_at_its_first_failing_step():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "right_square_bracket")
        assert (app.run_index, app.session.cursor) == (1, 3)  # the error
        assert status(app).startswith("failing run 2 of 7 (1 error)")
        await press(pilot, "right_square_bracket")
        assert (app.run_index, app.session.cursor) == (4, 4)  # judged wrong: where it answered
        assert "judged wrong" in status(app)
        await press(pilot, "right_square_bracket")
        assert (app.run_index, app.session.cursor) == (5, 4)  # the guard stopped it
        await press(pilot, "right_square_bracket")
        assert app.run_index == 5 and status(app).startswith("no failing run after run 6 of 7")
        await press(pilot, "left_square_bracket", "left_square_bracket")
        assert (app.run_index, app.session.cursor) == (1, 3)
        await press(pilot, "left_square_bracket")
        assert app.run_index == 1 and "no failing run before run 2" in status(app)


async def test_the_view_filter_narrows_the_timeline_and_stepping():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "f")
        await type_text(pilot, "~tool search")
        await press(pilot, "enter")
        timeline = app.query_one("#timeline")
        assert timeline.row_count == 2 and [timeline.step_at(0), timeline.step_at(1)] == [1, 3]
        assert "filter ~tool search 2 of 4 steps" in app.query_one("#header").text
        assert app.session.cursor == 1
        await press(pilot, "n")
        assert app.session.cursor == 3
        await press(pilot, "n")
        assert app.session.cursor == 3 and "no step after this one matches ~tool search" in status(app)
        await press(pilot, "p")
        assert app.session.cursor == 1
        await press(pilot, "end")
        assert app.session.cursor == 3
        # A filter that does not parse is refused in the dialog, with the parser's message.
        await press(pilot, "f", "ctrl+u")
        await type_text(pilot, "~stp 3")
        await press(pilot, "enter")
        assert "unknown filter" in str(app.screen.query_one("#prompt-hint").render())
        await press(pilot, "escape")
        assert app.query_one("#timeline").row_count == 2
        # An empty filter shows every step again.
        await press(pilot, "f", "ctrl+u", "enter")
        assert timeline.row_count == 4 and "filter" not in app.query_one("#header").text
        await press(pilot, "n")
        assert app.session.cursor == 4


async def test_a_filter_no_step_matches_leaves_the_view_unchanged():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "f")
        await type_text(pilot, "~tool nothing")
        await press(pilot, "enter")
        assert app.query_one("#timeline").row_count == 4
        assert "no step of this run matches ~tool nothing" in status(app)


async def test_clicking_a_filtered_row_goes_to_its_step():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "f")
        await type_text(pilot, "~tool lookup | ~final")
        await press(pilot, "enter")
        await pilot.click("#timeline", offset=(5, 2))  # the second row (below the border): step 4
        await settle(pilot)
        assert app.session.cursor == 4
