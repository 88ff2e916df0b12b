"""The debugger says whether a run got it right: the header, the status line at the last
step, the run list (each run's verdict, and `/` to filter the list with ~wrong)."""

from __future__ import annotations

from test_import_support import fixture
from test_tui_support import SIZE, live_app, press, screen_text, settle, status, type_text

from agentdbg import importers
from agentdbg.importers.builder import RunBuilder
from agentdbg.runs import Document, EventRun
from agentdbg.tui.app import DebuggerApp

RUNS_LOG = fixture("react-paper", "runs.log")  # questions 12 (correct), 40 (wrong, out of steps), 77 (correct)


def graded(*runs: tuple[str, dict | None]) -> Document:
    built = []
    for number, (answer, verdict) in enumerate(runs, 1):
        builder = RunBuilder(f"task {number}", name=f"case {number}")
        builder.step(thought="thinking", tool="Search", args="x", call="Search[x]", observation="y")
        builder.step(thought="done", answer=answer)
        built.append(EventRun(builder.build(verdict=verdict)))
    return Document("graded runs", "trace", built)


def header(app) -> str:
    return app.query_one("#header").text


def listed(app) -> list[str]:
    """The run list's rows, as text: its cells joined by a space."""
    table = app.screen.query_one("#run-list")
    return [" ".join(" ".join(getattr(cell, "plain", str(cell)) for cell in table.get_row_at(i)).split())
            for i in range(table.row_count)]


async def test_the_header_says_wrong_and_what_was_expected():
    document = graded(("SUPPORTS", {"correct": False, "score": 0, "expected": "REFUTES", "grader": "em"}),
                      ("2", {"correct": True, "score": 1, "expected": "2", "grader": "em"}),
                      ("x", {"correct": True, "score": 0.6, "expected": None, "grader": "f1"}),
                      ("y", {"correct": None, "score": 0.5, "expected": "z", "grader": "model_graded_qa"}),
                      ("w", None))
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        expected = [
            "outcome: answered, wrong (answer: SUPPORTS, expected: REFUTES)",
            "outcome: answered, correct (answer: 2)",  # the expected answer is the answer given
            "outcome: answered, correct (answer: x, score 0.6)",  # partial credit
            "outcome: answered, score 0.5 (answer: y, expected: z)",
            "outcome: answered (answer: w)",  # no verdict: nothing said about it
        ]
        for index, shown in enumerate(expected):
            if index:
                await press(pilot, "r", "down", "enter")
            assert app.run_index == index
            assert shown in header(app)
        assert "wrong" not in header(app) and "correct" not in header(app)


async def test_the_status_line_at_the_last_step_names_the_grader():
    app = DebuggerApp(importers.open_import(RUNS_LOG), run_index=1, save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "outcome: budget exhausted, wrong (expected: REFUTES)" in header(app)
        await press(pilot, "end", "n")
        assert status(app) == ("at the last step: the run ended (budget exhausted, wrong; "
                               "expected: REFUTES; grader: em)")


async def test_a_plans_expected_answer_shows_once_the_live_run_ends(tmp_path):
    app = live_app(tmp_path, "library_good.toml")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "live run" in header(app) and "correct" not in header(app)
        await press(pilot, "c", "c")
        assert app.session.run.complete
        assert "outcome: answered, correct (answer: 2)" in header(app)


async def test_the_run_list_shows_each_verdict_and_filters_with_wrong():
    app = DebuggerApp(importers.open_import(RUNS_LOG), save_breakpoints=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "r")
        rows = listed(app)
        assert len(rows) == 3
        assert rows[0].startswith("1 question 12 answered correct 3 0 0")
        assert rows[1].startswith("✗ 2 question 40 budget exhausted wrong 7")
        await press(pilot, "slash")
        await type_text(pilot, "~wrong")
        await press(pilot, "enter")
        screen = app.screen
        assert screen.shown == [1]
        assert "1 of 3 runs have a step matching ~wrong" in screen_text(app)
        assert [row.split(" budget")[0] for row in listed(app)] == ["✗ 2 question 40"]
        await press(pilot, "enter")  # the list has the focus again: Enter opens the run
        assert app.run_index == 1 and app.run_filter == "~wrong"
        await press(pilot, "r")  # the list opens filtered as it was left
        assert app.screen.shown == [1] and app.screen.query_one("#run-filter").value == "~wrong"
        await press(pilot, "escape")
        assert app.run_index == 1


async def test_a_bad_filter_is_refused_and_an_empty_one_lists_every_run():
    app = DebuggerApp(importers.open_import(RUNS_LOG), save_breakpoints=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "r", "slash")
        await type_text(pilot, "~wrongly")
        await press(pilot, "enter")
        assert app.screen.shown == [0, 1, 2]
        assert "filter not applied: ~wrongly: unknown filter at column 1" in screen_text(app)
        for _ in range(len("~wrongly")):
            await pilot.press("backspace")
        await type_text(pilot, "~correct")
        await press(pilot, "enter")
        assert app.screen.shown == [0, 2]
        await press(pilot, "slash")
        for _ in range(len("~correct")):
            await pilot.press("backspace")
        await press(pilot, "enter")
        assert app.screen.shown == [0, 1, 2]


async def test_no_run_matching_leaves_the_list_empty_and_says_so():
    app = DebuggerApp(importers.open_import(RUNS_LOG), save_breakpoints=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "r", "slash")
        await type_text(pilot, "~tool Nowhere")
        await press(pilot, "enter")
        assert app.screen.shown == [] and listed(app) == []
        assert "0 of 3 runs have a step matching ~tool Nowhere" in screen_text(app)
        await press(pilot, "escape")
        assert app.screen.id != "runs" and app.run_index == 0


async def test_a_hostile_expected_answer_is_shown_as_plain_text():
    document = graded(("a", {"correct": False, "score": 0, "expected": "[red]x[/red]\x1b[31m\u202eB",
                              "grader": "\x1b]52;c;aGk=\x07em"}))
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        shown = header(app)
        assert "expected: [red]x[/red]" in shown and "\x1b" not in shown and "\u202e" not in shown
        await press(pilot, "end", "n")
        assert "\x1b" not in status(app) and "\x07" not in status(app)
