"""Triage in the debugger: `]` / `[` go to the next / previous failing run at its first
failing step; `f` narrows the timeline to the steps a filter keeps (n / p move between
them, an empty filter shows every step); `z` folds long observations."""

from __future__ import annotations

from test_tui_support import SIZE, press, screen_text, settle, status, type_text

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


# -- the run list ---------------------------------------------------------------------------


def rows(app) -> list[list[str]]:
    table = app.screen.query_one("#run-list")
    return [[getattr(cell, "plain", str(cell)).strip() for cell in table.get_row_at(i)] for i in range(table.row_count)]


async def open_list(pilot) -> None:
    await press(pilot, "r")
    await pilot.pause(0.1)
    await settle(pilot)


async def test_the_run_list_has_a_column_per_figure_and_marks_failing_runs():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_list(pilot)
        table = rows(app)
        assert table[0] == ["1", "case 1", "answered", "correct", "4", "0", "0", "0"]
        assert table[1] == ["✗ 2", "case 2", "answered", "correct", "4", "1", "0", "0"]
        assert table[4][:4] == ["✗ 5", "case 5", "answered", "wrong"]
        assert table[5][:3] == ["✗ 6", "case 6", "budget exhausted"]


async def test_sorting_by_keys_and_by_clicking_a_header():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_list(pilot)
        await press(pilot, "s")  # by outcome
        assert [row[0] for row in rows(app)][-1] == "✗ 6"  # answered < budget exhausted
        await press(pilot, "s")  # by verdict: wrong first
        assert rows(app)[0][0] == "✗ 5"
        await press(pilot, "s", "s")  # by errors, most first
        assert rows(app)[0][0] == "✗ 2" and app.screen.sort == ("errors", True)
        assert "err ▼" in screen_text(app)
        await press(pilot, "S")  # reversed
        assert rows(app)[-1][0] == "✗ 2"
        await pilot.click("#run-list", offset=(4, 0))  # the run column's header: back to the file's order
        await settle(pilot)
        assert [row[0] for row in rows(app)] == ["1", "✗ 2", "3", "4", "✗ 5", "✗ 6", "7"]
        await press(pilot, "s")
        await press(pilot, "escape")
        assert app.run_sort == ("outcome", False)
        await open_list(pilot)  # the sort is kept
        assert rows(app)[-1][0] == "✗ 6" and "outcome ▲" in screen_text(app)
        await press(pilot, "enter")  # Enter opens the highlighted run
        assert app.run_index == 0


async def test_the_run_list_filters_with_the_filter_language():
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for text, expected in (("~outcome budget", [5]), ("~wrong", [4]), ("~tool calc & ~error", [1]),
                               ("~error | ~tripped | ~wrong", [1, 4, 5])):
            await open_list(pilot)
            await press(pilot, "slash", "ctrl+u")
            await type_text(pilot, text)
            await press(pilot, "enter")
            await settle(pilot)
            assert app.screen.shown == expected, text
            assert [row[0].lstrip("✗ ") for row in rows(app)] == [str(i + 1) for i in expected]
            await press(pilot, "escape")


def snapshot_document() -> Document:
    """Runs with long and hostile names, every outcome and verdict, for the pictures."""
    names = ["search the catalogue", "an error at step 3", "a plain run", "the [bold]markup[/] stays text",
             "judged wrong", "stopped by the step budget", "a run with a rather long name that will not fit in the column"]
    doc = document()
    for run, name in zip(doc.runs, names, strict=True):
        run.title = name
    return doc


def snapshot_keys(pilot_keys=()):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await open_list(pilot)
        for key in pilot_keys:
            await press(pilot, key)
        await settle(pilot)

    return run_before


def test_the_run_list_at_80x24(snap_compare):
    app = DebuggerApp(snapshot_document(), save_breakpoints=False)
    assert snap_compare(app, terminal_size=(80, 24), run_before=snapshot_keys())


def test_the_run_list_sorted_by_errors_at_120x40(snap_compare):
    app = DebuggerApp(snapshot_document(), save_breakpoints=False)
    assert snap_compare(app, terminal_size=(120, 40), run_before=snapshot_keys(["s", "s", "s", "s"]))


async def test_a_sort_orders_every_run_of_the_file_not_only_those_listed(monkeypatch):
    from agentdbg.tui.screens import lists

    monkeypatch.setattr(lists, "RUN_LIST", 3)  # a file with more runs than the list shows
    app = DebuggerApp(document(), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_list(pilot)
        assert len(rows(app)) == 3 and rows(app)[0][0] == "1"
        await press(pilot, "s", "s")  # by verdict: the wrong run 5 was not listed before
        await pilot.pause(0.1)
        await settle(pilot)
        assert rows(app)[0][0] == "✗ 5"
        assert "sorted: all 7 runs (the top 3 listed)" in screen_text(app)


async def test_at_80x24_the_header_keeps_the_filter_and_the_position():
    app = DebuggerApp(document(), run_index=1, save_breakpoints=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "f")
        await type_text(pilot, "~tool search | ~error")
        await press(pilot, "enter", "n")
        first_line = screen_text(app).splitlines()[0]
        assert first_line.rstrip().endswith("filter ~tool search | ~error 2 of 4 steps  step 3/4")
