"""Daily use of the debugger: narrow terminals, copying a step, the log of stops, search
with counts and highlights, the keymap file and the theme."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_tui_support import (
    SIZE,
    demo_app,
    press,
    recorded_document,
    screen_text,
    settle,
    status,
    type_text,
)

from agentdbg.debugger.find import Query, matching_steps
from agentdbg.tui.app import DebuggerApp
from agentdbg.tui.settings import Settings, parse_keymap, read_keymap, read_theme

NARROW = (80, 24)


def recorded_app(**kwargs) -> DebuggerApp:
    return DebuggerApp(recorded_document(), save_breakpoints=False, **kwargs)


def shown(app, selector: str) -> bool:
    widget = app.query_one(selector)
    return widget.display and widget.region.width > 0 and widget.region.height > 0


# --- narrow terminals ----------------------------------------------------------------------

async def test_at_80_columns_the_sidebar_is_a_tab_beside_the_scratchpad():
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        assert app.narrow and shown(app, "#pane-tabs") and shown(app, "#scratchpad")
        assert not shown(app, "#sidebar")
        await press(pilot, "3")  # the memory pane, in the scratchpad's place
        assert shown(app, "#memory") and not shown(app, "#scratchpad") and not shown(app, "#tools")
        await press(pilot, "2")
        assert shown(app, "#tools") and not shown(app, "#memory")
        await press(pilot, "2")  # again: back to the transcript
        assert shown(app, "#scratchpad") and not shown(app, "#sidebar")
        text = screen_text(app)
        assert "Help" in text and "Quit" in text  # the footer starts with them


async def test_a_tab_can_be_clicked_and_widening_the_terminal_shows_every_pane():
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.click("#tab-guards")
        await settle(pilot)
        assert app.tab == "guards" and shown(app, "#guards") and not shown(app, "#scratchpad")
        await pilot.resize_terminal(*SIZE)
        await settle(pilot)
        assert not app.narrow and not shown(app, "#pane-tabs")
        for pane in ("timeline", "scratchpad", "guards", "tools", "memory"):
            assert shown(app, f"#{pane}"), pane
        await pilot.resize_terminal(*NARROW)
        await settle(pilot)
        assert app.narrow and app.tab == "scratchpad" and not shown(app, "#sidebar")


async def test_the_timeline_grows_with_the_terminal():
    app = recorded_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.query_one("#timeline").size.width >= 44  # 36 columns at 120


@pytest.mark.parametrize("key,screen_id", [("B", "breakpoints"), ("question_mark", "help"), ("e", "log"),
                                           ("g", "goto"), ("slash", "search"), ("o", "open"), ("w", "write"),
                                           ("W", "whatif")])
async def test_every_dialog_fits_80x24(key, screen_id):
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await press(pilot, key)
        assert app.screen.id == screen_id
        for widget in app.screen.query("Button, Input, Select"):
            if widget.display:
                region = widget.region
                assert region.right <= NARROW[0] and region.x >= 0, (widget, region)


async def test_the_replace_question_fits_80x24(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "library_hallucinating.trace.jsonl").write_text("kept\n")
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await press(pilot, "w", "enter")
        assert app.screen.id == "confirm-write"
        for button in app.screen.query("Button"):
            assert button.region.right <= NARROW[0] and button.region.bottom <= NARROW[1]


async def test_the_breakpoint_managers_add_button_is_on_screen_at_80x24():
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await press(pilot, "B")
        button = app.screen.query_one("#bp-add-button")
        assert button.region.right <= 80 and 0 < button.region.y < 24
        await type_text(pilot, "~tool calc")
        await press(pilot, "enter")
        assert len(app.breakpoints) == 1


# --- copy ----------------------------------------------------------------------------------

def capture_clipboard(app, monkeypatch) -> list[str]:
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    return copied


async def test_y_copies_the_step_and_Y_its_events_as_json(monkeypatch):
    app = recorded_app()
    copied = capture_clipboard(app, monkeypatch)
    notes: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(message))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "y")
        assert copied[-1].startswith("Step 1\nThought: ")
        assert "web_search" in copied[-1] and "does not exist" in copied[-1]
        assert notes[-1].startswith("Copied step 1 as text")
        await press(pilot, "Y")
        events = json.loads(copied[-1])
        types = [event["type"] for event in events]
        assert "action" in types and "observation" in types and all(e["step"] == 1 for e in events)
        assert "as JSON" in notes[-1] and f"{len(events)} events" in notes[-1]
        app.query_one("#tools").focus()
        await press(pilot, "y")
        assert "catalog" in copied[-1] and "unknown tool" in copied[-1] and "Tools" in notes[-1]
        app.query_one("#scratchpad").focus()
        await press(pilot, "n", "v", "y")  # the prompt view shown: its prompt
        assert copied[-1].startswith("Question: How many copies") and "Observation: ERROR" in copied[-1]
        assert notes[-1].startswith("Copied the prompt of step 2")


async def test_copy_before_any_step_says_there_is_nothing(monkeypatch):
    app = demo_app()
    copied = capture_clipboard(app, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "y")
        assert copied == [] and "no step to copy" in status(app)


# --- the log --------------------------------------------------------------------------------

async def test_the_log_lists_every_stop_with_its_full_reason_and_goes_back_there():
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:  # the status line cuts the reason here
        await settle(pilot)
        await press(pilot, "c", "C")  # to the final answer, back to the unknown tool
        assert [entry.step for entry in app.stop_log.entries] == [5, 1]
        first = app.stop_log.entries[1]
        assert any("does not exist, available: ['calc', 'catalog', 'loans']" in r
                                       for r in first.reasons)
        await press(pilot, "e")
        assert app.screen.id == "log"
        text = screen_text(app)
        assert "'loans']" in text  # in full, wrapped
        await press(pilot, "down", "enter")  # the older stop: the final answer
        assert app.screen is app.screen_stack[0] and app.session.cursor == 5


# --- search --------------------------------------------------------------------------------

def test_search_rule_tilde_or_bang_is_a_filter_else_a_regex():
    assert Query.parse("~tool calc").is_filter and Query.parse("  !~error").is_filter
    assert not Query.parse("calc|loans").is_filter
    literal = Query.parse("\\~home")
    assert not literal.is_filter and literal.text == "~home"
    with pytest.raises(ValueError):
        Query.parse("~nonsense")
    assert list(Query.parse("ab").spans("xab ab")) == [(1, 3), (4, 6)]
    assert list(Query.parse("~error").spans("error")) == []


def test_matching_steps_counts_regex_and_filter_matches():
    run = recorded_document().runs[0]
    assert matching_steps(run, Query.parse("~tool calc")) == [4]
    steps = matching_steps(run, Query.parse("gattopardo"))
    assert steps and steps == sorted(steps) and 2 in steps


async def test_search_says_match_n_of_m_and_highlights_matches():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        await type_text(pilot, "Gattopardo")
        await press(pilot, "enter")
        total = len(matching_steps(app.session.run, Query.parse("Gattopardo")))
        assert f"match for 'Gattopardo' at step 2: match 2 of {total}" in status(app)
        await press(pilot, "full_stop")
        assert f"at step 3: match 3 of {total}" in status(app)
        await press(pilot, "comma", "comma")
        assert f"at step 1: match 1 of {total}" in status(app)
        scratchpad = app.query_one("#scratchpad")
        highlighted = [segment.text for strip in scratchpad._lines for segment in strip
                       if segment.style is not None and segment.style.bgcolor is not None
                       and segment.style.bgcolor.name == "yellow"]
        assert highlighted and all(text == "Gattopardo" for text in highlighted)
        await press(pilot, "slash", "ctrl+u", "enter")  # an empty search clears it
        assert scratchpad.highlight is None and "cleared" in status(app)


async def test_a_filter_in_search_and_a_bad_one_kept_in_the_dialog():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        await type_text(pilot, "~tool calc")
        await press(pilot, "enter")
        assert app.session.cursor == 4 and "match for filter ~tool calc at step 4: match 1 of 1" in status(app)
        await press(pilot, "slash", "ctrl+u")
        await type_text(pilot, "~bogus")
        await press(pilot, "enter")
        assert app.screen.id == "search"
        assert "not a filter" in str(app.screen.query_one("#prompt-hint").render())


# --- keymap and theme ------------------------------------------------------------------------

def test_keymap_entries_are_checked_and_bad_ones_named_with_their_line(tmp_path):
    text = '\n'.join([
        '"step.forward" = "x"',
        '"nope" = "z"',
        '"step.goto" = 3',
        '"step.first" = "ctrl+home,??"',
        '"step.back" = "c"',  # continue's key, and continue keeps it
        '"timeline.down" = "ctrl+j"',
    ])
    keymap, problems = parse_keymap(text, "keymap.toml")
    assert keymap == {"step.forward": "x", "timeline.down": "ctrl+j"}
    assert problems[0].startswith("keymap.toml:2: 'nope' is not a binding id")
    assert problems[1].startswith("keymap.toml:3: step.goto: keys must be a string")
    assert problems[2].startswith("keymap.toml:4: step.first: '??' is not a key name")
    assert problems[3].startswith("keymap.toml:5: step.back:") and "step.continue" in problems[3]
    swapped, none = parse_keymap('"step.continue" = "x"\n"step.back" = "c"\n', "k")
    assert none == [] and swapped == {"step.continue": "x", "step.back": "c"}
    assert parse_keymap("[keymap]\n'app.help' = 'h'\n")[0] == {"app.help": "h"}
    assert "not TOML" in parse_keymap("a = [")[1][0]
    assert read_keymap(tmp_path / "absent.toml") == ({}, [])
    assert "not a regular file" in read_keymap(tmp_path)[1][0]


async def test_a_remapped_key_works_and_the_help_shows_it(monkeypatch):
    keymap, problems = parse_keymap('"step.forward" = "x"\n"bogus" = "y"\n', "keymap.toml")
    app = demo_app()
    app.settings = Settings(keymap, problems)
    notes: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(message))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any("keymap.toml:2" in note for note in notes)  # told at once, listed in e
        assert any("'bogus' is not a binding id" in p for p in app.problems)
        await press(pilot, "x")
        assert app.session.cursor == 1
        await press(pilot, "question_mark")
        line = next(line for line in screen_text(app).splitlines() if "step forward one step" in line)
        assert re.search(r"│\s+x\s{2,}step forward one step", line), line


async def test_t_switches_the_theme_and_remembers_it(tmp_path):
    state = tmp_path / "state" / "ui.json"
    app = demo_app()
    app.settings = Settings(state_file=state)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.theme
        await press(pilot, "t")
        assert app.theme != before and read_theme(state) == app.theme
        await press(pilot, "t")
        assert app.theme == before and read_theme(state) == before
    state.write_text("{not json")
    assert read_theme(state) is None
    assert Settings.load(tmp_path / "none.toml", state).theme is None


# --- files ---------------------------------------------------------------------------------

async def test_w_shows_the_full_path_and_asks_before_replacing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "kept.jsonl"
    target.write_text("precious\n")
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "w", "ctrl+u")
        await type_text(pilot, "kept.jsonl")
        await settle(pilot)
        hint = str(app.screen.query_one("#prompt-hint").render())
        assert str(target) in hint and "asked before it is replaced" in hint
        await press(pilot, "enter")
        assert app.screen.id == "confirm-write" and str(target) in screen_text(app).replace("│", "")
        await press(pilot, "enter")  # the focused button is Cancel: Enter alone replaces nothing
        assert target.read_text() == "precious\n" and "not written" in status(app)
        await press(pilot, "w", "ctrl+u")
        await type_text(pilot, "kept.jsonl")
        await press(pilot, "enter", "y")
        assert '"type":"run_start"' in target.read_text() and str(target) in status(app)


async def test_tab_completes_a_path_in_the_open_dialog(tmp_path):
    (tmp_path / "runs").mkdir()
    for name in ("alpha_one.jsonl", "alpha_two.jsonl", "beta.toml"):
        (tmp_path / "runs" / name).write_text("")
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "o", "ctrl+u")
        await type_text(pilot, f"{tmp_path}/ru")
        await press(pilot, "tab")
        field = app.screen.query_one("#prompt-input")
        assert field.value == f"{tmp_path}/runs/"
        await type_text(pilot, "al")
        await press(pilot, "tab")
        assert field.value == f"{tmp_path}/runs/alpha_"
        hint = str(app.screen.query_one("#prompt-hint").render())
        assert "2 matches" in hint and "alpha_one.jsonl" in hint and "alpha_two.jsonl" in hint
        await type_text(pilot, "z")
        await press(pilot, "tab")
        assert "no file starts with that" in str(app.screen.query_one("#prompt-hint").render())
        assert app.screen.id == "open"  # Tab never left the field


async def test_a_plans_breakpoints_go_to_the_data_directory_and_an_old_file_beside_it_is_read(tmp_path):
    from test_tui_support import plan_copy

    from agentdbg.debugger.breakpoints import BreakpointSet, sidecar_path
    from agentdbg.debugger.sidecar import breakpoints_target, data_dir
    from agentdbg.documents import open_document

    plan = plan_copy(tmp_path, "library_hallucinating.toml")
    old = BreakpointSet()
    old.add("tool", "calc")
    old.save(sidecar_path(plan))  # where an earlier agentdbg saved them
    before = sidecar_path(plan).read_bytes()
    app = DebuggerApp(open_document(plan))
    notes: list[tuple[str, str]] = []
    app.notify = lambda message, **kw: notes.append((kw.get("title", ""), message))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(app.breakpoints) == 1  # the tool breakpoint read from beside the plan
        store = sidecar_path(breakpoints_target(plan, "plan"))
        assert store.is_relative_to(data_dir() / "breakpoints")
        assert any(title == "Breakpoints moved" and str(store) in message for title, message in notes)
        await press(pilot, "n", "b")
    saved = json.loads(store.read_text())["breakpoints"]
    assert {entry["kind"] for entry in saved} == {"tool", "step"}
    assert sidecar_path(plan).read_bytes() == before  # the old file is left as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["library_hallucinating.toml", sidecar_path(plan).name])
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert breakpoints_target(plan_copy(other, "library_hallucinating.toml"), "plan") != breakpoints_target(plan, "plan")


@pytest.mark.parametrize("size", [NARROW, (160, 48)])
async def test_the_first_frame_wraps_the_scratchpad_at_its_real_width(monkeypatch, size):
    from agentdbg.tui.widgets.scratchpad import Scratchpad

    built: list[int] = []
    build_lines = Scratchpad.build_lines
    monkeypatch.setattr(Scratchpad, "build_lines",
                        lambda self, width: built.append(width) or build_lines(self, width))
    app = recorded_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        real = app.query_one("#scratchpad").scrollable_content_region.width
    assert built and set(built) == {real} and real > 40  # never one character per line first


# --- the guards pane -----------------------------------------------------------------------

async def test_the_repeat_bar_reads_zero_on_a_first_time_action_and_tokens_say_not_recorded():
    from test_tui_support import pane_text

    from agentdbg.documents import open_document

    app = recorded_app()  # a plan's run: tokens estimated, threshold 2
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = pane_text(app, "guards")
        assert "repeat" in text and " 0/1 " in text and "tokens 32 no limit" in text
    unrecorded = Path(__file__).parent / "fixtures" / "import" / "swe-agent" / "edge_unfinished.traj"
    app = DebuggerApp(open_document(unrecorded), save_breakpoints=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = pane_text(app, "guards")
        assert "tokens not recorded" in text and "tok/st not recorded" in text


async def test_a_stop_reason_cut_on_the_status_line_points_to_the_log():
    app = recorded_app()
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await press(pilot, "c", "C")
        line = screen_text(app).splitlines()[-2]
        assert line.rstrip().endswith("… e: full reason") and line.lstrip().startswith("Stopped at step 1")
    app = recorded_app()
    async with app.run_test(size=(200, 40)) as pilot:  # room for it all: no hint
        await settle(pilot)
        await press(pilot, "c", "C")
        assert "e: full reason" not in screen_text(app) and "'loans']" in screen_text(app)


async def test_resizing_under_a_dialog_lays_the_screen_out_for_the_new_width():
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        await pilot.resize_terminal(*NARROW)
        await settle(pilot)
        assert app.screen.id == "help"
        await press(pilot, "escape")
        assert app.narrow and shown(app, "#pane-tabs") and not shown(app, "#sidebar")
