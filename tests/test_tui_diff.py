"""The split view of two runs (D, agentdbg diff --tui): one cursor for both sides, next and
previous difference, one side at a time when narrow, and pictures of it."""

from __future__ import annotations

import dataclasses
import io
import time
from pathlib import Path

from test_tui_support import PLANS, pane_text, press, screen_text, settle, status, type_text

from agentdbg.documents import open_document
from agentdbg.engine import events as ev
from agentdbg.model.runs import Document, EventRun
from agentdbg.plans import load_plan
from agentdbg.trace.synthetic import synthetic_run
from agentdbg.trace.writer import write_trace
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.screens.diff import AlignedTimeline, DiffScreen
from agentdbg.tui.screens.help import HelpScreen, help_text


def plan_events(name: str) -> list[ev.Event]:
    return load_plan(PLANS / f"{name}.toml").run().events


def changed_observation(events: list[ev.Event], step: int, text: str) -> list[ev.Event]:
    return [dataclasses.replace(e, text=text) if isinstance(e, ev.Observation) and e.step == step else e
            for e in events]


def pair_document() -> Document:
    """Run 1: the good library run; run 2: the hallucinating one (a step more at the start)
    with another loans observation, so the two differ in two places."""
    good = plan_events("library_good")
    other = changed_observation(plan_events("library_hallucinating"), 3, "[bold]4[/] on loan \x1b[31m")
    return Document("two runs", "trace", [EventRun(good, "good"), EventRun(other, "hallucinating")])


def diff_app(**kwargs) -> DebuggerApp:
    document = pair_document()
    return DebuggerApp(document, save_breakpoints=False,
                       diff_with=(document, 1, False), **kwargs)


def side(app, letter: str) -> AlignedTimeline:
    return app.screen.query_one(f"#diff-list-{letter}", AlignedTimeline)


async def open_split(pilot) -> DiffScreen:
    await settle(pilot)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, DiffScreen), type(screen)
    return screen


async def test_d_compares_with_another_run_of_the_file() -> None:
    app = DebuggerApp(pair_document(), save_breakpoints=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "D")
        assert app.screen.query_one("#prompt-input").value == "2"  # the next run is offered
        await press(pilot, "enter")
        screen = await open_split(pilot)
        assert screen.row == 0  # the cursor starts at the first difference
        assert side(app, "a").row_text(0).startswith("▶+") and "····" in side(app, "a").row_text(0)  # a gap
        assert "web_search[Il Gattopardo copies]" in side(app, "b").row_text(0)
        assert "only in B" in str(screen.query_one("#diff-status").render())


async def test_one_cursor_moves_both_sides() -> None:
    app = diff_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_split(pilot)
        await press(pilot, "down")
        assert screen.row == 1
        assert side(app, "a").cursor.row == side(app, "b").cursor.row == 1
        assert side(app, "a").row_text(1).startswith("▶") and side(app, "b").row_text(1).startswith("▶")
        detail_a, detail_b = pane_text(screen, "diff-detail-a"), pane_text(screen, "diff-detail-b")
        assert "step 1 equal" in detail_a and "catalog[Il Gattopardo]" in detail_a
        assert "step 2 equal" in detail_b and "catalog[Il Gattopardo]" in detail_b
        await press(pilot, "j", "j")
        assert screen.row == 3 and side(app, "b").cursor.row == 3


async def test_scrolling_one_side_scrolls_the_other(tmp_path: Path) -> None:
    events = list(synthetic_run(200))
    document = Document("long", "trace", [EventRun(events, "a"), EventRun(changed_observation(events, 150, "x"), "b")])
    app = DebuggerApp(document, save_breakpoints=False, diff_with=(document, 1, False))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_split(pilot)
        assert screen.row == 149
        top = round(side(app, "b").scroll_y)
        assert top > 100 and round(side(app, "a").scroll_y) == top
        side(app, "a").scroll_to(y=top - 20, animate=False)  # as the wheel over A does
        await settle(pilot)
        assert round(side(app, "a").scroll_y) < top
        assert round(side(app, "b").scroll_y) == round(side(app, "a").scroll_y)


async def test_next_and_previous_difference() -> None:
    app = diff_app()
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_split(pilot)
        await press(pilot, "right_curly_bracket")
        assert screen.row == 2  # loans: its observation differs
        detail_b = pane_text(screen, "diff-detail-b")
        assert "≠ Observation: [bold]4[/] on loan" in detail_b  # shown literally, no escape left
        assert "\x1b" not in detail_b
        assert "differs: observation" in pane_text(screen, "diff-detail-a")
        assert "changed (observation)" in str(screen.query_one("#diff-status").render())
        await press(pilot, "right_curly_bracket")
        assert screen.row == 2  # no difference after: the cursor stays
        await press(pilot, "left_curly_bracket")
        assert screen.row == 0
        await press(pilot, "end")
        assert screen.row == 4
        await press(pilot, "left_curly_bracket")
        assert screen.row == 2


async def test_narrow_terminal_shows_one_side_and_s_shows_the_other() -> None:
    app = diff_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_split(pilot)
        assert screen.query_one("#diff-a").display and not screen.query_one("#diff-b").display
        await press(pilot, "down")
        await press(pilot, "s")
        assert not screen.query_one("#diff-a").display and screen.query_one("#diff-b").display
        assert screen.row == 1  # the cursor stays where it was
        assert app.focused is side(app, "b")
        await press(pilot, "down")
        assert screen.row == 2 and side(app, "a").cursor.row == 2


async def test_enter_goes_to_the_step_and_esc_closes() -> None:
    app = diff_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await open_split(pilot)
        await press(pilot, "right_curly_bracket", "enter")
        assert not isinstance(app.screen, DiffScreen)
        assert app.session.cursor == 2
        await press(pilot, "D", "enter")
        await open_split(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "next difference: the first row of the next stretch" in help_plain()  # it lists these keys
        await press(pilot, "escape")
        assert isinstance(app.screen, DiffScreen)
        await press(pilot, "escape")
        assert not isinstance(app.screen, DiffScreen) and app.session.cursor == 2


async def test_d_with_a_file_and_a_run_number(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    write_trace(runs, [plan_events("library_hallucinating"), plan_events("library_good")])
    app = DebuggerApp(open_document(PLANS / "library_good.toml", live=False), save_breakpoints=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "g")
        await type_text(pilot, "3")
        await press(pilot, "enter")
        await press(pilot, "D")
        await type_text(pilot, f"{runs}:2")
        await press(pilot, "enter")
        screen = await open_split(pilot)
        assert screen.result.identical
        assert screen.row == 2  # no difference to open on: the debugger's step
        assert "the runs are the same" in str(screen.query_one("#diff-header").render())
        await press(pilot, "escape")
        await press(pilot, "D")
        await type_text(pilot, str(tmp_path / "missing.jsonl"))
        await press(pilot, "enter")
        await settle(pilot)
        assert not isinstance(app.screen, DiffScreen)
        assert "missing.jsonl" in status(app) and status(app).startswith("diff:")


async def test_the_command_line_opens_the_split_view(tmp_path: Path) -> None:
    from agentdbg.cli import diff as cli_diff

    seen = {}

    def fake_run(self) -> None:  # the app is checked in a pilot, not run on this terminal
        seen["app"] = self

    a = tmp_path / "a.jsonl"
    write_trace(a, [plan_events("library_good")])
    original = DebuggerApp.run
    DebuggerApp.run = fake_run
    try:
        import argparse

        parser = argparse.ArgumentParser()
        cli_diff.add_arguments(parser)
        code = cli_diff.run(parser.parse_args([str(a), str(PLANS / "library_hallucinating.toml"), "--tui"]))
    finally:
        DebuggerApp.run = original
    assert code == 0
    app = seen["app"]
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_split(pilot)
        assert screen.result.alignment.counts()["only in B"] == 1


async def test_hostile_names_and_texts_stay_literal() -> None:
    hostile = "[bold red]x[/] \x1b[2J\x1b]8;;http://evil\x07link\u202e"
    events = plan_events("library_good")
    other = [dataclasses.replace(e, name=hostile) if isinstance(e, ev.RunStart) else e
             for e in changed_observation(events, 1, hostile * 50)]
    document = Document(hostile, "trace", [EventRun(events, hostile), EventRun(other, hostile)])
    app = DebuggerApp(document, save_breakpoints=False, diff_with=(document, 1, False))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_split(pilot)
        shown = screen_text(app)
        (border,) = [line for line in shown.splitlines() if "B: run 2" in line]
        assert "[bold red]x[/]" in border  # the title is not read as markup
        assert "[bold red]x[/]" in shown and "\x1b" not in shown and "\u202e" not in shown
        assert screen.row == 0 and "observation" in str(screen.query_one("#diff-status").render())


def help_plain() -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(help_text())
    return console.export_text()


def split_view(size: tuple[int, int], *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await settle(pilot)
        for key in keys:
            await press(pilot, key)

    return run_before


def test_split_view_at_80x24(snap_compare) -> None:
    assert snap_compare(diff_app(), terminal_size=(80, 24), run_before=split_view((80, 24), "right_curly_bracket"))


def test_split_view_at_160x48(snap_compare) -> None:
    assert snap_compare(diff_app(), terminal_size=(160, 48), run_before=split_view((160, 48), "right_curly_bracket"))


async def test_agentdbg_a_dash_dash_diff_b(tmp_path: Path, capsys) -> None:
    from agentdbg.cli import _main_parser, debug

    runs = tmp_path / "runs.jsonl"
    write_trace(runs, [plan_events("library_good"), plan_events("library_hallucinating")])
    args = _main_parser().parse_args([str(runs), "--diff", f"{runs}:2"])
    app = debug.build_app(args)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_split(pilot)
        assert screen.result.alignment.counts()["only in B"] == 1
    assert debug.build_app(_main_parser().parse_args([str(runs), "--diff", str(tmp_path / "nope.jsonl:2")])) == 2
    assert "--diff" in capsys.readouterr().err


async def test_a_run_being_written_is_compared_as_far_as_it_has_gone(tmp_path: Path) -> None:
    from live_support import SlowWriter, until

    path = tmp_path / "run.jsonl"
    with SlowWriter(path) as writer:
        writer.step(2)
        app = DebuggerApp(open_document(path), save_breakpoints=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.session is not None and app.session.run.step_count == 2, what="step 2")
            await press(pilot, "D")
            await type_text(pilot, str(PLANS / "library_hallucinating.toml"))
            await press(pilot, "enter")
            await until(pilot, lambda: isinstance(app.screen, DiffScreen), what="the split view")
            counts = app.screen.result.alignment.counts()
            assert counts["equal"] == 2 and counts["only in B"] == 3
            assert "as far as it has gone: 2 steps" in status(app)
        writer.finish()


async def test_a_parse_error_against_an_action_shows_what_went_wrong() -> None:
    good = plan_events("library_good")
    broken = []
    for event in good:
        if event.step == 2 and isinstance(event, (ev.ActionTaken, ev.Observation)):
            if isinstance(event, ev.ActionTaken):
                broken.append(ev.ParseFailed(2, "no Action line in the output", "I think [red]so[/]"))
            continue
        broken.append(event)
    document = Document("parse", "trace", [EventRun(good, "good"), EventRun(broken, "broken")])
    app = DebuggerApp(document, save_breakpoints=False, diff_with=(document, 1, False))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_split(pilot)
        assert screen.row == 1
        detail_b = pane_text(screen, "diff-detail-b")
        assert "≠ error: parse error: no Action line in the output" in detail_b
        assert "Output: I think [red]so[/]" in detail_b
        assert "≠ Action: loans[Il Gattopardo]" in pane_text(screen, "diff-detail-a")
        assert "loans[Il Gattopardo]" in side(app, "a").row_text(1)
        assert "parse error: no Action line" in side(app, "b").row_text(1)


class SlowRun(EventRun):
    """A run whose steps take a millisecond each to read (a long file on a slow disk)."""

    def record(self, step: int):
        time.sleep(0.001)
        return super().record(step)


async def test_esc_cancels_a_long_comparison() -> None:
    events = list(synthetic_run(5_000))
    document = Document("long", "trace", [SlowRun(events, "a"), SlowRun(events, "b")])
    app = DebuggerApp(document, save_breakpoints=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "D")
        await pilot.press("enter")
        await pilot.pause()
        assert app.busy == "diff"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, DiffScreen)
        assert status(app) == "diff cancelled" and app.busy is None
